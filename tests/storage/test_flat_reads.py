"""Reads on every `/sync status`, status page and routing decision cost the same however
long the history: per-source record counts kept by triggers, and an index that serves the
Sessions-by-activity page (pinned by the plans, not by timing)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import delete, func, insert, select, text, update

from bot.sync.counts import RecordCountsWorker
from storage.db import Database
from storage.models import Session, Source, SourceRecord, SourceRecordCountChange
from storage.repos import source_records, sources, workhub
from storage.repos.source_records import NewRecord

NOW = datetime(2026, 12, 6, 4, 0, tzinfo=UTC)


def _record(source: str, external_id: str) -> NewRecord:
    return NewRecord(source, external_id, f"scope:{source}", f"text {external_id}", NOW)


async def _real_counts(db: Database) -> dict[str, int]:
    async with db.read() as tx:
        rows = await tx.execute(
            select(SourceRecord.source, func.count()).group_by(SourceRecord.source)
        )
        return {str(s): int(n) for s, n in rows.all()}


async def _kept_counts(db: Database) -> dict[str, int]:
    async with db.read() as tx:
        return await source_records.counts_by_source(tx)


async def test_kept_record_counts_equal_the_real_counts_after_inserts_duplicates_and_removals(
    db: Database,
) -> None:
    async with db.write() as tx:  # ingest's path, with a batch spanning two sources
        await source_records.add_records(
            tx, [_record("feishu:oc_a", f"m{i}") for i in range(5)] + [_record("mail:x", "1")], NOW
        )
    async with db.write() as tx:  # redelivered and synced again: stored once, counted once
        new = await source_records.insert_records(
            tx, [_record("feishu:oc_a", "m0"), _record("feishu:oc_a", "m5")], NOW
        )
    assert [external_id for _, _, external_id in new] == ["m5"]
    assert await _kept_counts(db) == await _real_counts(db) == {"feishu:oc_a": 6, "mail:x": 1}

    async with db.write() as tx:  # a recalled message becomes its tombstone
        await source_records.remove_message(
            tx, "feishu:oc_a", "m1", scope="scope:feishu:oc_a", now=NOW
        )
    assert await _kept_counts(db) == await _real_counts(db) == {"feishu:oc_a": 6, "mail:x": 1}

    async with db.write() as tx:  # rows deleted outright (forgetting a source)
        await tx.execute(delete(SourceRecord).where(SourceRecord.source == "mail:x"))
    assert await _kept_counts(db) == await _real_counts(db) == {"feishu:oc_a": 6}

    async with db.write() as tx:  # the record-counts worker's fold changes no count
        await source_records.fold_record_counts(tx)
    async with db.read() as tx:
        pending = await tx.scalar(select(func.count()).select_from(SourceRecordCountChange))
    assert pending == 0
    assert await _kept_counts(db) == await _real_counts(db) == {"feishu:oc_a": 6}


async def test_writers_of_one_source_do_not_wait_for_each_others_commit(db: Database) -> None:
    if db.is_sqlite:
        pytest.skip("SQLite writes one at a time")
    first = db.sessions()  # a write in flight, not committed yet
    try:
        await source_records.add_records(first, [_record("feishu:oc_a", "m1")], NOW)

        async def second() -> None:
            async with db.write() as tx:
                await source_records.add_records(tx, [_record("feishu:oc_a", "m2")], NOW)

        # A counter row locked by the first writer would hold the second until it commits.
        try:
            await asyncio.wait_for(second(), timeout=20)
        except TimeoutError:
            pytest.fail("the second writer waited for the first one's commit")
        await first.commit()
    finally:
        await first.close()
    assert await _kept_counts(db) == {"feishu:oc_a": 2}


async def test_a_finished_sync_records_the_kept_count_on_its_source_row(db: Database) -> None:
    async with db.write() as tx:
        await sources.ensure(tx, name="mail:x", kind="mail", scope=None, title=None, now=NOW)
        await source_records.add_records(tx, [_record("mail:x", str(i)) for i in range(3)], NOW)
        row = await sources.get(tx, "mail:x")
        assert row is not None
        await tx.execute(  # a run holding the lease, as its claim leaves it
            update(Source)
            .where(Source.id == row.id)
            .values(lease_owner="me", lease_expires_at=NOW + timedelta(minutes=1))
        )
        assert await sources.finish(tx, row.id, "me", now=NOW, error=None, wanted_at=None)
    async with db.read() as tx:
        row = await sources.get(tx, "mail:x")
    assert row is not None and row.record_count == 3


async def _sessions(db: Database, n: int) -> None:
    rows: list[dict[str, Any]] = [
        {
            "name": f"task {i}",
            "state": "active",
            "is_archived": i % 7 == 0,
            "labels": [],
            "conversation_id": None,
            "created_at": NOW - timedelta(days=30),
            "last_message_at": NOW - timedelta(minutes=i) if i % 3 else None,
            "status_updated_at": NOW - timedelta(minutes=i, seconds=30),
        }
        for i in range(n)
    ]
    async with db.write() as tx:
        await tx.execute(insert(Session), rows)


async def _plan(db: Database, conversation_id: int | None) -> str:
    query = workhub.by_activity(conversation_id, offset=0, limit=8).compile(
        dialect=db.engine.dialect, compile_kwargs={"literal_binds": True}
    )
    async with db.read() as tx:
        if db.dialect == "postgresql":
            # The table is small here: tell the planner a full scan is dear, as it is with
            # 10k Sessions; the point is that the index CAN serve the order and the limit.
            await tx.execute(text("SET LOCAL enable_seqscan = off"))
            rows = await tx.execute(text(f"EXPLAIN {query}"))
            return "\n".join(str(r[0]) for r in rows)
        rows = await tx.execute(text(f"EXPLAIN QUERY PLAN {query}"))
        return "\n".join(str(r[-1]) for r in rows)


@pytest.mark.parametrize("in_a_conversation", [False, True])
async def test_sessions_by_activity_reads_a_page_of_the_index_not_every_session_sorted(
    db: Database, in_a_conversation: bool
) -> None:
    await _sessions(db, 60)
    conversation_id = 1 if in_a_conversation else None
    plan = await _plan(db, conversation_id)
    wanted = (
        "ix_sessions_conversation_candidates_by_activity"
        if in_a_conversation
        else "ix_sessions_candidates_by_activity"
    )
    assert wanted in plan, plan
    assert "Sort" not in plan and "TEMP B-TREE" not in plan, plan


async def test_sessions_by_activity_pages_most_recent_first_and_skips_non_candidates(
    db: Database,
) -> None:
    await _sessions(db, 30)
    async with db.read() as tx:
        first = await workhub.sessions_by_activity(tx, conversation_id=None, offset=0, limit=5)
        second = await workhub.sessions_by_activity(tx, conversation_id=None, offset=5, limit=5)
    names = [s.name for s in first + second]
    # task 0 and task 7 are archived; the rest most recent first (i minutes ago)
    assert names == [f"task {i}" for i in (1, 2, 3, 4, 5, 6, 8, 9, 10, 11)]


async def test_the_record_counts_worker_folds_the_appended_changes_and_then_rests(
    db: Database,
) -> None:
    async with db.write() as tx:
        await source_records.add_records(
            tx, [_record("feishu:oc_a", f"m{i}") for i in range(3)], NOW
        )
    worker = RecordCountsWorker(db)
    assert await worker.run_once() is (not db.is_sqlite)  # SQLite's triggers count in place
    assert await worker.run_once() is False  # nothing left to fold
    async with db.read() as tx:
        pending = await tx.scalar(select(func.count()).select_from(SourceRecordCountChange))
    assert pending == 0
    assert await _kept_counts(db) == {"feishu:oc_a": 3}
