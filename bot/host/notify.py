"""Prompt wake-ups for idle workers.

A worker subscribes to topics *before* it looks for work, then waits on the subscription:
a notification that lands in between is not lost. On PostgreSQL, notifications travel
between replicas with LISTEN/NOTIFY; everywhere, a short poll bounds the delay if one is
missed (a dropped LISTEN connection, a write from another process on SQLite).

A process hears its own NOTIFYs too; it ignores them (each carries the sender's mark, its
Database's `mark`), since it woke its own workers already: `notify` does, and a writer does
after its commit. Hearing them again woke every idle worker of the topic a second time.

The topics of `WOKEN_BY_INSERT` PostgreSQL sends itself: a trigger on each table notifies at
the commit of a transaction that inserted into it (migration 0016), marked with the writing
process's application_name, so the hot paths that make work (ingest, a Bot turn's reply and
its log) spend no statement on it. `publish` is for the other topics.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Iterable
from typing import Any

import asyncpg
from sqlalchemy import TextClause, text
from sqlalchemy.ext.asyncio import AsyncSession

from storage.db import Database
from storage.urls import asyncpg_dsn

log = logging.getLogger(__name__)
CHANNEL = "maka_wake"
_NOTIFY = text("SELECT pg_notify(:channel, :payload)")
_PUBLISHED = "maka_published_topics"  # in a transaction's session.info
# table -> the topic an insert into it wakes, on every replica (migration 0016's triggers)
WOKEN_BY_INSERT = {
    "inbox_items": "inbox",
    "outbox": "outbox",
    "source_records": "source-index",
    "session_events": "session-index",
}


@functools.cache
def _notify_statement(topics: int) -> TextClause:
    calls = ", ".join(f"pg_notify(:channel, :p{n})" for n in range(topics))
    return text(f"SELECT {calls}")


class Subscription:
    def __init__(self, notifier: Notifier, topics: frozenset[str]) -> None:
        self._notifier = notifier
        self.topics = topics
        self.event = asyncio.Event()

    async def wait(self, timeout: float) -> bool:
        """True if woken by a notification, False on timeout."""
        try:
            async with asyncio.timeout(max(timeout, 0.0)):
                await self.event.wait()
            return True
        except TimeoutError:
            return False
        finally:
            self.close()

    def close(self) -> None:
        self._notifier._subscriptions.discard(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class Notifier:
    """In-process wake-ups; see PostgresNotifier for the cross-replica kind."""

    def __init__(self) -> None:
        self._subscriptions: set[Subscription] = set()

    def subscribe(self, topics: Iterable[str]) -> Subscription:
        sub = Subscription(self, frozenset(topics))
        self._subscriptions.add(sub)
        return sub

    def wake_local(self, topic: str) -> None:
        for sub in list(self._subscriptions):
            if topic in sub.topics:
                sub.event.set()

    def wake_all(self) -> None:
        for sub in list(self._subscriptions):
            sub.event.set()

    async def notify(self, topic: str) -> None:
        """Call after the commit that made work available."""
        self.wake_local(topic)

    async def publish(self, tx: AsyncSession, *topics: str) -> None:
        """Call inside the write transaction that makes work available: other replicas hear
        of it at commit, with no extra connection. Wake this process's own workers with
        `wake_local` after the commit. Not for the topics of `WOKEN_BY_INSERT`: an insert
        into their table tells the other replicas already."""

    async def start(self) -> None:
        pass

    async def close(self) -> None:
        self.wake_all()


class PostgresNotifier(Notifier):
    def __init__(self, db: Database) -> None:
        super().__init__()
        self._db = db
        self._conn: asyncpg.Connection | None = None
        self._keeper: asyncio.Task[None] | None = None
        self._mark = db.mark  # on this process's notifications: "<topic>@<mark>"

    async def start(self) -> None:
        await self._listen()
        self._keeper = asyncio.create_task(self._keep_listening(), name="notifier-listen")

    async def _listen(self) -> None:
        conn = await asyncpg.connect(asyncpg_dsn(self._db.url))
        await conn.add_listener(CHANNEL, self._on_notification)
        self._conn = conn

    def _on_notification(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        topic, _, mark = payload.partition("@")  # no mark: an older replica's
        if mark != self._mark:
            self.wake_local(topic)

    async def _keep_listening(self) -> None:
        while True:
            await asyncio.sleep(5)
            if self._conn is None or self._conn.is_closed():
                try:
                    await self._listen()
                    self.wake_all()  # we may have missed notifications while deaf
                except (OSError, asyncpg.PostgresError) as exc:
                    log.warning("LISTEN connection lost, polling until it is back: %s", exc)

    async def notify(self, topic: str) -> None:
        self.wake_local(topic)
        try:
            async with self._db.engine.connect() as conn:
                await conn.execute(_NOTIFY, {"channel": CHANNEL, "payload": self._payload(topic)})
                await conn.commit()
        except Exception as exc:  # the poll still finds the work; never fail the writer
            log.warning("pg_notify(%s) failed: %s", topic, exc)

    async def publish(self, tx: AsyncSession, *topics: str) -> None:
        """One statement for all of `topics`, and none for a topic this transaction has
        published already (grouped writes each publish theirs): a statement is a round trip,
        each waiting for a turn of a busy event loop."""
        published: set[str] = tx.info.setdefault(_PUBLISHED, set())
        fresh = [topic for topic in dict.fromkeys(topics) if topic not in published]
        if not fresh:
            return
        published.update(fresh)
        params = {"channel": CHANNEL, **{f"p{n}": self._payload(t) for n, t in enumerate(fresh)}}
        await tx.execute(_notify_statement(len(fresh)), params)

    def _payload(self, topic: str) -> str:
        return f"{topic}@{self._mark}"

    async def close(self) -> None:
        if self._keeper is not None:
            self._keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keeper
        if self._conn is not None and not self._conn.is_closed():
            await self._conn.close()
        await super().close()


def create_notifier(db: Database) -> Notifier:
    return Notifier() if db.is_sqlite else PostgresNotifier(db)
