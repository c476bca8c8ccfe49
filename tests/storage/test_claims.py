"""A claim (`storage.claims`) is one UPDATE whose WHERE picks the rows: it takes as many of
the free rows as asked, in their order, sets what the claim sets on exactly those, and
leaves the rest for the next claimer."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from storage.db import Database
from storage.models import OutboxMessage, Timer
from storage.repos import outbox, timers
from tests.seed import pending_reply

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
LEASE = timedelta(minutes=1)


async def _timers_due(db: Database, n: int) -> None:
    async with db.write() as tx:
        for i in range(n):  # scheduled latest first: the claim's order is not the insert's
            due = NOW - timedelta(seconds=i)
            await timers.schedule(tx, kind="wake", key=f"t{i}", due_at=due, payload={})


async def test_a_claim_takes_as_many_as_asked_earliest_first_and_leaves_the_rest(
    db: Database,
) -> None:
    await _timers_due(db, 4)
    async with db.write_statement() as tx:
        first = await timers.claim_due(tx, owner="host-a", now=NOW, limit=3, lease=LEASE)
    async with db.write_statement() as tx:
        second = await timers.claim_due(tx, owner="host-b", now=NOW, limit=3, lease=LEASE)
    async with db.read() as tx:
        owners = dict((await tx.execute(select(Timer.key, Timer.lease_owner))).all())
    assert [t.key for t in first] == ["t3", "t2", "t1"]
    assert [t.key for t in second] == ["t0"]
    assert owners == {"t3": "host-a", "t2": "host-a", "t1": "host-a", "t0": "host-b"}
    assert all(t.lease_expires_at == NOW + LEASE for t in first)


async def test_a_delivery_claim_counts_its_attempt_in_the_same_statement(db: Database) -> None:
    async with db.write() as tx:
        await pending_reply(tx, "oc_1", NOW)
    async with db.write_statement() as tx:
        [claimed] = await outbox.claim_due(
            tx, platform="feishu", owner="host-a", now=NOW, limit=5, lease=LEASE
        )
    async with db.write_statement() as tx:
        again = await outbox.claim_due(
            tx, platform="feishu", owner="host-b", now=NOW, limit=5, lease=LEASE
        )
    async with db.read() as tx:
        stored = await tx.scalar(select(OutboxMessage).where(OutboxMessage.id == claimed.id))
    assert stored is not None
    assert (claimed.attempts, stored.attempts, stored.lease_owner) == (1, 1, "host-a")
    assert again == []  # claimed and not expired: nobody else's


async def test_claimers_side_by_side_take_disjoint_rows(db: Database) -> None:
    if db.is_sqlite:
        pytest.skip("SQLite claims one at a time: its writes are")
    await _timers_due(db, 12)

    async def claimer(owner: str) -> list[str]:
        async with db.write_statement() as tx:
            taken = await timers.claim_due(tx, owner=owner, now=NOW, limit=4, lease=LEASE)
        return [t.key for t in taken]

    batches = await asyncio.wait_for(
        asyncio.gather(*(claimer(f"host-{i}") for i in range(3))), timeout=30
    )
    keys = [key for batch in batches for key in batch]
    assert [len(batch) for batch in batches] == [4, 4, 4]
    assert sorted(keys) == sorted(f"t{i}" for i in range(12))  # each row once, none left out
