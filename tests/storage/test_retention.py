"""Retention on both databases: old handled rows go in small batches; recent rows, and rows
that still wait (an undelivered inbox item, a pending or uncertain outbox row), stay; inbound
events (duplicate detection) stay a week whatever is set; one pruner at a time; the last
prune is recorded with the table sizes."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import ColumnElement, func, select, text

from bot.config import ConfigError, load_settings
from bot.host.retention import LEASE, LostLease, Pruner, RetentionPolicy, RetentionWorker
from storage.db import Database
from storage.models import InboundEvent, InboxItem, ModelCall, Operation, OutboxMessage
from storage.repos import leases
from storage.repos import retention as repo
from storage.types import utcnow

POLICY = RetentionPolicy(
    days={
        "inbound_events": 30,
        "inbox_items": 30,
        "outbox": 30,
        "model_calls": 90,
        "operations": 30,
    }
)


def _event(n: int, at: datetime) -> InboundEvent:
    return InboundEvent(
        platform="feishu",
        message_id=f"om_{n}",
        event_type="message",
        chat_id="oc_1",
        payload={},
        status="accepted",
        received_at=at,
    )


def _item(n: int, at: datetime, *, delivered: bool) -> InboxItem:
    return InboxItem(
        kind="user_message",
        payload={},
        dedupe_key=f"feishu:om_{n}",
        created_at=at,
        delivered_at=at if delivered else None,
    )


def _outbox(key: str, at: datetime, state: str) -> OutboxMessage:
    return OutboxMessage(
        idempotency_key=key,
        platform="feishu",
        chat_id="oc_1",
        content_type="text",
        content={"text": key},
        state=state,
        created_at=at,
        next_attempt_at=at,
    )


async def _seed(db: Database, now: datetime) -> None:
    old, new, older = now - timedelta(days=40), now - timedelta(days=1), now - timedelta(days=100)
    async with db.write() as tx:
        # Oldest first, as ids are handed out: the walk steps over the old rows that wait.
        tx.add_all(
            [_outbox("old-pending", old, "pending"), _outbox("old-uncertain", old, "uncertain")]
        )
        tx.add(_item(0, old, delivered=False))
        # A notice handled long ago: `/why ID` explains the message it caused, so it stays.
        tx.add(InboxItem(kind="finding", payload={}, created_at=old, delivered_at=old))
        await tx.flush()
        for n in range(1, 6):
            tx.add_all([_event(n, old), _item(n, old, delivered=True)])
            tx.add_all(
                [_outbox(f"old-sent-{n}", old, "sent"), _outbox(f"old-failed-{n}", old, "failed")]
            )
            tx.add(ModelCall(purpose="bot", model="m", created_at=older))
            tx.add(
                Operation(
                    id=f"op-old-{n}", kind="settle", fingerprint="f", outcome={}, created_at=old
                )
            )
            await tx.flush()
        tx.add(ModelCall(purpose="bot", model="m", created_at=old))  # within its 90 days
        tx.add_all(
            [_event(9, new), _item(9, new, delivered=True), _outbox("new-sent", new, "sent")]
        )
        tx.add(Operation(id="op-new", kind="settle", fingerprint="f", outcome={}, created_at=new))


async def _count(db: Database, model: type[Any], *where: ColumnElement[bool]) -> int:
    async with db.read() as tx:
        return int(await tx.scalar(select(func.count()).select_from(model).where(*where)) or 0)


async def test_old_handled_rows_go_and_recent_and_waiting_rows_stay(db: Database) -> None:
    now = utcnow()
    await _seed(db, now)
    report = await Pruner(db, POLICY, "test-host", batch=2).prune()  # many small batches
    assert report.ran and report.error is None
    assert report.deleted == {
        "inbound_events": 5,
        "inbox_items": 5,
        "outbox": 10,
        "model_calls": 5,
        "operations": 5,
    }
    async with db.read() as tx:
        outbox_keys = set((await tx.scalars(select(OutboxMessage.idempotency_key))).all())
        items = (await tx.execute(select(InboxItem.dedupe_key, InboxItem.delivered_at))).all()
        ops = set((await tx.scalars(select(Operation.id))).all())
    assert outbox_keys == {"old-pending", "old-uncertain", "new-sent"}
    # waiting, the notice, and young
    assert sorted(str(k) for k, _ in items) == ["None", "feishu:om_0", "feishu:om_9"]
    assert ops == {"op-new"}
    assert await _count(db, InboundEvent) == 1 and await _count(db, ModelCall) == 1
    async with db.read() as tx:
        last = await repo.last(tx)
    assert last is not None and last.deleted == report.deleted and last.error is None
    assert all(isinstance(n, int) and n >= 0 for n in last.sizes.values())
    if db.dialect == "sqlite":  # exact there; PostgreSQL's is the planner's estimate
        assert last.sizes["outbox"] == 3 and last.sizes["inbox_items"] == 3
    assert {"source_records", "session_events"} <= set(last.sizes)
    # Again: nothing more is old enough, and nothing that stayed is touched.
    again = await Pruner(db, POLICY, "test-host", batch=2).prune()
    assert sum(again.deleted.values()) == 0 and await _count(db, OutboxMessage) == 3


async def test_duplicate_keys_stay_a_week_whatever_the_policy_says(db: Database) -> None:
    now = utcnow()
    async with db.write() as tx:
        tx.add_all([_event(1, now - timedelta(days=8)), _event(2, now - timedelta(days=6))])
        tx.add(_item(2, now - timedelta(days=6), delivered=True))
    policy = RetentionPolicy(days={"inbound_events": 1, "inbox_items": 1})  # built by hand
    report = await Pruner(db, policy, "test-host").prune()
    assert report.deleted["inbound_events"] == 1 and report.deleted["inbox_items"] == 0
    async with db.read() as tx:
        assert list((await tx.scalars(select(InboundEvent.message_id))).all()) == ["om_2"]


async def test_zero_days_keeps_a_table_forever(db: Database) -> None:
    await _seed(db, utcnow())
    report = await Pruner(db, RetentionPolicy(days={"outbox": 0}), "test-host").prune()
    assert sum(report.deleted.values()) == 0
    assert await _count(db, OutboxMessage) == 13 and await _count(db, ModelCall) == 6


async def test_a_dry_run_counts_and_removes_nothing(db: Database) -> None:
    await _seed(db, utcnow())
    report = await Pruner(db, POLICY, "test-host").prune(dry_run=True)
    assert report.deleted["outbox"] == 10 and report.deleted["operations"] == 5
    assert await _count(db, OutboxMessage) == 13
    async with db.read() as tx:
        assert await repo.last(tx) is None  # a dry run records nothing


async def test_while_another_replica_prunes_this_one_does_not(db: Database) -> None:
    now = utcnow()
    await _seed(db, now)
    async with db.write() as tx:
        assert await leases.acquire(tx, LEASE, "other-host", timedelta(minutes=5), now)
    report = await Pruner(db, POLICY, "test-host").prune()
    assert not report.ran and await _count(db, OutboxMessage) == 13
    async with db.write() as tx:
        assert await leases.release(tx, LEASE, "other-host")
    assert (await Pruner(db, POLICY, "test-host").prune()).ran


async def test_the_worker_prunes_once_per_interval(db: Database) -> None:
    await _seed(db, utcnow())
    worker = RetentionWorker(Pruner(db, POLICY, "test-host"), first_delay=timedelta(0))
    await worker.run_once()
    assert await _count(db, OutboxMessage) == 3
    async with db.write() as tx:  # an old row again: not pruned before the interval is up
        tx.add(_outbox("old-again", utcnow() - timedelta(days=40), "sent"))
    await worker.run_once()
    assert await _count(db, OutboxMessage) == 4
    assert await worker.idle_timeout(1.0) > 60  # sleeps toward the next pass


@pytest.mark.parametrize("days", ["1", "6"])
def test_inbox_days_below_a_week_are_a_one_line_config_error(
    days: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAKA_RETENTION_INBOX_DAYS", days)
    with pytest.raises(ConfigError) as err:
        load_settings()
    [line] = err.value.lines
    assert line.startswith("MAKA_RETENTION_INBOX_DAYS: must be 0 (keep forever) or at least 7")


def test_the_policy_follows_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAKA_RETENTION_OUTBOX_DAYS", "0")
    monkeypatch.setenv("MAKA_RETENTION_INBOX_DAYS", "7")
    policy = RetentionPolicy.from_settings(load_settings())
    assert policy.days["outbox"] == 0 and policy.days["inbound_events"] == 7
    assert policy.days["model_calls"] == 90 and policy.interval == timedelta(hours=1)


async def test_table_sizes_are_postgresqls_estimate_and_sqlites_count(db: Database) -> None:
    await _seed(db, utcnow())
    if db.dialect != "sqlite":
        async with db.write() as tx:
            await tx.execute(text("ANALYZE outbox"))
    async with db.write() as tx:  # one more row, which no estimate knows of yet
        tx.add(_outbox("late", utcnow(), "sent"))
    async with db.read() as tx:
        sizes = await repo.sizes(tx)
    # PostgreSQL: the table is not read (pg_class.reltuples, as of the ANALYZE)
    assert sizes["outbox"] == (14 if db.dialect == "sqlite" else 13)
    assert set(sizes) == {t.name for t in repo.PRUNED_TABLES} | {"source_records", "session_events"}


async def test_a_pruner_that_lost_the_lease_deletes_nothing_more(db: Database) -> None:
    now = utcnow()
    await _seed(db, now)
    async with db.write() as tx:  # the lease is another replica's now
        assert await leases.acquire(tx, LEASE, "other-host", timedelta(minutes=5), now)
    pruner = Pruner(db, POLICY, "test-host", batch=2)
    with pytest.raises(LostLease):
        await pruner._prune(repo.OUTBOX, now)  # mid-pass: its next batch checks the lease
    assert await _count(db, OutboxMessage) == 13
