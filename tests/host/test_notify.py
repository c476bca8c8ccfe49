"""Wake-ups between replicas on PostgreSQL: a publish reaches the other replica at commit, and
a replica does not wake its own workers a second time when it hears its own notification."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

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
