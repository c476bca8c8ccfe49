"""Wake-ups between replicas on PostgreSQL: a publish reaches the other replica at commit, a
replica does not wake its own workers a second time when it hears its own notification, and a
transaction sends each topic once."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from sqlalchemy import event

from bot.host.notify import PostgresNotifier, Subscription
from storage.db import Database
from tests.waiting import wait_until


@pytest.mark.postgres
async def test_a_publish_wakes_the_other_replica_and_not_its_own_workers_twice(
    db: Database,
) -> None:
    if db.is_sqlite:
        pytest.skip("LISTEN/NOTIFY is PostgreSQL's")
    a, b = PostgresNotifier(db), PostgresNotifier(db)
    await a.start()
    await b.start()
    try:
        on_a, on_b = a.subscribe(["outbox"]), b.subscribe(["outbox"])
        heard_b = a.subscribe(["inbox"])
        async with db.write() as tx:
            await a.publish(tx, "outbox")
        await wait_until(_set(on_b), what="replica b woken by a's commit")
        async with db.write() as tx:  # a hears its own first: notifications come in order
            await b.publish(tx, "inbox")
        await wait_until(_set(heard_b), what="replica a woken by b's commit")
        assert not on_a.event.is_set(), "a woke its own worker on hearing its own notification"
    finally:
        await a.close()
        await b.close()


def _set(sub: Subscription) -> Callable[[], Awaitable[bool]]:
    async def is_set() -> bool:
        return sub.event.is_set()

    return is_set


@pytest.mark.postgres
async def test_a_transaction_publishes_each_topic_once_in_one_statement(db: Database) -> None:
    """Grouped writes each publish their topic, and ingest publishes two: every topic
    reaches the other replica, in one statement however many, none twice."""
    if db.is_sqlite:
        pytest.skip("LISTEN/NOTIFY is PostgreSQL's")
    statements: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        if "pg_notify" in statement:
            statements.append(statement)

    a, b = PostgresNotifier(db), PostgresNotifier(db)
    await a.start()
    await b.start()
    try:
        inbox, records = b.subscribe(["inbox"]), b.subscribe(["source-index"])
        event.listen(db.engine.sync_engine, "before_cursor_execute", count)
        async with db.write() as tx:
            await a.publish(tx, "inbox", "source-index")
            await a.publish(tx, "inbox")  # a second grouped write's: already on its way
            await a.publish(tx)  # nothing to say
        event.remove(db.engine.sync_engine, "before_cursor_execute", count)
        await wait_until(_set(inbox), what="the first topic heard by replica b")
        await wait_until(_set(records), what="the second topic heard by replica b")
        assert len(statements) == 1, statements
    finally:
        await a.close()
        await b.close()
