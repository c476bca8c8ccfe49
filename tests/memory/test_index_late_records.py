"""Index coverage never passes a record id that may still appear: a record whose transaction
took its id first and committed last is covered (both databases: a lower id written after
higher ones; on PostgreSQL also two real transactions), and an id that never comes is passed
over after the gap timeout, as the search followers do (`storage.seq_gaps`)."""

from __future__ import annotations

from datetime import UTC, timedelta
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from bot.llm.client import ModelClient
from bot.llm.scripted import PlannedReply, ScriptedProvider
from bot.llm.types import Message
from bot.memory.indexes.maintenance import IndexMaintenanceWorker
from bot.memory.indexes.tools import indexer_tools
from bot.memory.indexes.turn import IndexerTurn
from storage.db import Database
from storage.models import SourceRecord
from storage.repos import memory_indexes as repo
from storage.repos import source_records
from storage.repos import sources as source_repo
from storage.seq_gaps import Range, SeqGaps, missing_between
from storage.types import utcnow
from tests.memory.test_indexes import World, add_records, send, shown_refs

SOURCE, SCOPE = "feishu:oc_team", "group:oc_team"
OTHER = "group:oc_other"  # a chat no index here covers


@pytest.fixture
def model() -> ScriptedProvider:
    return ScriptedProvider()


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def world(db: Database, model: ScriptedProvider, clock: Clock) -> World:
    w = World(db, model)
    turn = IndexerTurn(ModelClient(model, w.recorder), indexer_tools(), timeout=30)
    w.worker = IndexMaintenanceWorker(
        db, w.service, turn, owner="test", tz=UTC, gap_timeout=30, clock=clock
    )
    return w


async def newest_seq(db: Database) -> int:
    async with db.read() as s:
        return await source_records.max_seq(s)


async def record_with_id(
    db: Database, seq: int, age: timedelta = timedelta(0), *, scope: str = SCOPE
) -> None:
    """A record with a chosen id: a lower id written after higher ones is one that appears late."""
    now = utcnow() - age
    source = f"feishu:{scope.split(':')[1]}"
    async with db.write() as s:
        await source_repo.ensure(s, name=source, kind="feishu", scope=scope, title="Team", now=now)
        s.add(
            SourceRecord(
                id=seq, source=source, external_id=f"om_id{seq}", scope=scope,
                text=f"message {seq}: Li decided", payload={}, created_at=now,
            )
        )  # fmt: skip


def read_and_complete(model: ScriptedProvider, shown: list[int]) -> None:
    """One indexing turn that reads its whole range and says it is complete."""

    def remember(messages: list[Message], _tools: object = None) -> PlannedReply:
        shown.extend(shown_refs(messages))
        return send("checkpoint", {"complete": True})

    model.add(send("records_read", {}), remember)


async def test_a_record_id_that_appears_late_is_still_covered(
    db: Database, model: ScriptedProvider
) -> None:
    w = world(db, model, Clock())
    await w.create()
    base = await newest_seq(db)
    await record_with_id(db, base + 1)
    await record_with_id(db, base + 3)  # base + 2 is still in flight
    shown: list[int] = []
    read_and_complete(model, shown)
    assert await w.worker.run_once()
    assert shown == [base + 1]
    index = await w.index()
    assert index.covered_cursor == base + 1  # not past the id that may still come

    await record_with_id(db, base + 2)  # it commits
    await w.due_now()
    read_and_complete(model, shown)
    assert await w.worker.run_once()
    assert shown == [base + 1, base + 2, base + 3]
    assert (await w.index()).covered_cursor == base + 3


async def test_a_record_id_that_never_comes_is_passed_over_after_the_gap_timeout(
    db: Database, model: ScriptedProvider
) -> None:
    clock = Clock()
    w = world(db, model, clock)
    await w.create()
    base = await newest_seq(db)
    await record_with_id(db, base + 2)  # base + 1 was taken by a rollback
    assert await w.worker.run_once()
    index = await w.index()
    assert index.covered_cursor == 0 and index.range_end is None
    assert index.status == "updating"  # records wait: not "no changes"
    assert index.pending_count == 1 and not model.requests  # nothing to read yet: no model call
    assert index.next_check_at is not None  # checked again when the gap may be passed over

    clock.now += 31
    await w.due_now()
    shown: list[int] = []
    read_and_complete(model, shown)
    assert await w.worker.run_once()
    assert shown == [base + 2]
    assert (await w.index()).covered_cursor == base + 2


async def test_an_old_hole_in_the_record_ids_holds_nothing_up(
    db: Database, model: ScriptedProvider
) -> None:
    w = world(db, model, Clock())
    await w.create()
    base = await newest_seq(db)
    await record_with_id(db, base + 2, age=timedelta(hours=1))  # base + 1: a conflict, long ago
    shown: list[int] = []
    read_and_complete(model, shown)
    assert await w.worker.run_once()
    assert shown == [base + 2]
    assert (await w.index()).covered_cursor == base + 2


async def test_a_quiet_chats_index_scans_for_gaps_only_what_came_since_its_last_check(
    db: Database, model: ScriptedProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its coverage stays at its chat's last record (only its agent moves it), but the check
    that finds the chat's next message does not scan every other chat's record since."""
    scanned: list[tuple[int, int]] = []
    missing_seqs = repo.missing_seqs

    async def spied(tx: AsyncSession, after: int, upto: int, **kwargs: Any) -> list[Range]:
        scanned.append((after, upto))
        return await missing_seqs(tx, after, upto, **kwargs)

    monkeypatch.setattr(repo, "missing_seqs", spied)
    w = world(db, model, Clock())
    await w.create()
    await add_records(db, 5, scope=OTHER)
    assert await w.worker.run_once()
    index = await w.index()
    others = await newest_seq(db)
    assert index.covered_cursor == 0 and index.status == "no_changes_at_last_check"
    assert index.pending_count == 0 and not model.requests  # nothing of its scopes: no model

    await add_records(db, 1, start=5)
    await w.due_now()
    shown: list[int] = []
    read_and_complete(model, shown)
    assert await w.worker.run_once()
    assert shown == [others + 1]
    assert scanned == [(0, others), (others, others + 1)]
    assert (await w.index()).covered_cursor == others + 1


async def test_a_check_with_nothing_new_remembers_an_id_in_flight_among_other_chats(
    db: Database, model: ScriptedProvider
) -> None:
    w = world(db, model, Clock())
    await w.create()
    base = await newest_seq(db)
    await record_with_id(db, base + 1, scope=OTHER)
    await record_with_id(db, base + 3, scope=OTHER)  # base + 2 is still in flight
    assert await w.worker.run_once()  # nothing of its scopes: what it saw is remembered
    assert (await w.index()).covered_cursor == 0

    await record_with_id(db, base + 2)  # it commits, and is the team's
    await w.due_now()
    shown: list[int] = []
    read_and_complete(model, shown)
    assert await w.worker.run_once()
    assert shown == [base + 2]
    assert (await w.index()).covered_cursor == base + 2  # its range ends at its own record


async def test_a_record_committed_after_a_later_one_was_indexed_is_covered_on_postgres(
    db: Database, model: ScriptedProvider
) -> None:
    if db.is_sqlite:
        pytest.skip("SQLite writes one at a time: ids appear in order")
    w = world(db, model, Clock())
    await w.create()
    await add_records(db, 1)  # the index starts with one record to cover
    late = db.sessions()  # takes its id now, commits after the next record is covered
    now = utcnow()
    await source_records.insert_records(
        late,
        [source_records.NewRecord(SOURCE, "om_late", SCOPE, "late: Li decided", now, title="Team")],
        now,
    )
    await add_records(db, 1, start=1)
    shown: list[int] = []
    read_and_complete(model, shown)
    assert await w.worker.run_once()
    first = await newest_seq(db)
    assert len(shown) == 1 and shown[0] < first  # the record before the one in flight
    assert (await w.index()).covered_cursor == shown[0]

    await late.commit()
    await late.close()
    await w.due_now()
    read_and_complete(model, shown)
    assert await w.worker.run_once()
    assert shown[1:] == [shown[0] + 1, shown[0] + 2]  # the late record and the one after it
    assert (await w.index()).covered_cursor == first


def test_a_late_id_splits_the_gap_that_held_it_and_keeps_its_age() -> None:
    gaps = SeqGaps(timeout=30)
    gaps.add(missing_between(0, [1, 5]), now=0)
    assert gaps.ranges == [(2, 4)] and gaps.horizon(5) == 1
    gaps.found([3])
    assert gaps.ranges == [(2, 2), (4, 4)]
    gaps.observe([(4, 4)], now=20)  # 2 came too
    assert gaps.noticed == {(4, 4): 0}
    gaps.expire(now=30)
    assert gaps.horizon(5) == 5
    gaps.observe([(4, 4)], now=40)  # passed over: never held again
    assert gaps.horizon(5) == 5
