"""Timers: a due wake fires exactly once, also across restarts and replicas; late, never lost.

A handler runs inside the same transaction that marks its timer fired, so its effects and the
"fired" mark commit together: a crash before the commit leaves the timer pending (its lease
lapses and it fires later), a crash after leaves it fired. Handlers must therefore be short
database work, such as appending to an inbox; long work is handed to its own worker.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from bot.host.backoff import backoff, error_line, log_failure
from bot.host.notify import Notifier
from bot.host.workers import Worker
from storage.db import Database
from storage.models import Timer
from storage.repos import timers as repo
from storage.types import utcnow

log = logging.getLogger(__name__)
RETRY_MOST = 3600.0  # seconds: the longest wait before a failed timer is fired again

TOPIC = "timers"
TimerHandler = Callable[[AsyncSession, Timer], Awaitable[None]]


class Timers:
    """Schedule wakes and register what each kind of wake does."""

    def __init__(self, db: Database, notifier: Notifier) -> None:
        self.db = db
        self.notifier = notifier
        self.handlers: dict[str, TimerHandler] = {}

    def on(self, kind: str, handler: TimerHandler) -> None:
        self.handlers[kind] = handler

    async def schedule(
        self, *, kind: str, key: str, due_at: datetime, payload: dict[str, Any] | None = None
    ) -> None:
        async with self.db.write() as tx:
            await repo.schedule(tx, kind=kind, key=key, due_at=due_at, payload=payload or {})
        await self.notifier.notify(TOPIC)

    async def cancel(self, key: str) -> bool:
        async with self.db.write() as tx:
            return await repo.cancel(tx, key)


class TimerWorker(Worker):
    name = "timers"
    topics = (TOPIC,)

    def __init__(
        self,
        timers: Timers,
        owner: str,
        *,
        lease: timedelta = timedelta(seconds=60),
        batch: int = 20,
        max_attempts: int = 5,
    ) -> None:
        self.timers = timers
        self.owner = owner
        self.lease = lease
        self.batch = batch
        self.max_attempts = max_attempts

    async def run_once(self) -> bool:
        db = self.timers.db
        async with db.read() as tx:
            if not await repo.has_due(tx, utcnow()):
                return False
        async with db.write() as tx:
            due = await repo.claim_due(
                tx, owner=self.owner, now=utcnow(), limit=self.batch, lease=self.lease
            )
            claimed = [(t.id, t.kind, t.key, t.attempts) for t in due]
        for timer_id, kind, key, attempts in claimed:
            await self._fire(timer_id, kind, key, attempts)
        return bool(claimed)

    async def _fire(self, timer_id: int, kind: str, key: str, attempts: int) -> None:
        db = self.timers.db
        handler = self.timers.handlers.get(kind)
        try:
            async with db.write() as tx:
                if not await repo.mark_fired(tx, timer_id, self.owner, utcnow()):
                    log.warning("timer %s: claim lost before firing; another holder fires it", key)
                    return
                if handler is None:
                    raise LookupError(f"no handler for timer kind {kind!r}")
                timer = await tx.get(Timer, timer_id)
                assert timer is not None
                await handler(tx, timer)
        except Exception as exc:
            log_failure(log, f"timer {key} ({kind}) failed", exc)
            give_up = handler is None or attempts + 1 >= self.max_attempts
            wait = backoff(attempts + 1, first=2.0, most=RETRY_MOST)
            retry_at = None if give_up else utcnow() + timedelta(seconds=wait)
            async with db.write() as tx:
                await repo.record_failure(
                    tx,
                    timer_id,
                    self.owner,
                    error=error_line(exc),
                    retry_at=retry_at,
                )

    async def idle_timeout(self, poll_interval: float) -> float:
        async with self.timers.db.read() as tx:
            next_due = await repo.next_due_at(tx)
        if next_due is None:
            return poll_interval
        return max(0.0, min(poll_interval, (next_due - utcnow()).total_seconds()))
