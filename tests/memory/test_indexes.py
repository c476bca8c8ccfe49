"""Memory indexes kept by an indexing agent (scripted model, both databases): coverage moves
only when a range is complete, an interrupted range resumes where it was, a failed check is
not "no changes", an idle cycle makes no model call, a turn killed mid-batch loses and
doubles nothing, and entries lead back to their originals."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.exc import OperationalError

from bot.agent.tools import ToolError
from bot.assistant.visibility import Visibility
from bot.host.notify import Notifier
from bot.llm.client import MemoryRecorder, ModelClient
from bot.llm.scripted import PlannedReply, ScriptedProvider
from bot.llm.types import Message
from bot.memory import recall
from bot.memory.indexes import maintenance
from bot.memory.indexes.maintenance import IndexMaintenanceWorker
from bot.memory.indexes.service import IndexService
from bot.memory.indexes.tools import indexer_tools
from bot.memory.indexes.turn import IndexerTurn
from bot.memory.search import SearchService
from storage.db import Database
from storage.models import InboxItem, IndexEntry, MemoryIndex
from storage.repos import conversations, source_records
from storage.repos import memory_indexes as repo
from storage.repos import sources as source_repo
from storage.repos.source_records import NewRecord
from storage.search.embedded import EmbeddedSearchIndex
from storage.types import utcnow
from tests.seed import record_of

OWNER = "ou_owner"
TEAM_SCOPES = frozenset({"group:oc_team"})
send = ScriptedProvider.tool_call
REC = re.compile(r"\[rec-(\d+)\]")


async def add_records(db: Database, n: int, scope: str = "group:oc_team", start: int = 0) -> None:
    now = utcnow()
    source = f"feishu:{scope.split(':')[1]}"
    records = [
        NewRecord(source, f"om_{start + i}", scope, f"message {start + i}: Li decided item {i}",
                  now, author="ou_li", title="Team")
        for i in range(n)
    ]  # fmt: skip
    async with db.write() as s:
        await source_repo.ensure(s, name=source, kind="feishu", scope=scope, title="Team", now=now)
        await source_records.insert_records(s, records, now)


class World:
    def __init__(self, db: Database, model: ScriptedProvider) -> None:
        self.db, self.model = db, model
        self.recorder = MemoryRecorder()
        self.service = IndexService(db, Notifier(), OWNER)
        turn = IndexerTurn(ModelClient(model, self.recorder), indexer_tools(), timeout=30)
        self.worker = IndexMaintenanceWorker(db, self.service, turn, owner="test", tz=UTC)

    async def create(self) -> MemoryIndex:
        """The index, made in the team's group chat: it covers that group."""
        async with self.db.write() as s:
            group = await conversations.get_or_create(
                s, platform="feishu", chat_id="oc_team", chat_type="group"
            )
        self.team = Visibility(everything=False, conversation_id=group.id, scopes=TEAM_SCOPES)
        return await self.service.create(
            "decisions", "decisions and who made them", self.team, created_by=OWNER,
            interval=3600,
        )  # fmt: skip

    async def index(self) -> MemoryIndex:
        async with self.db.read() as s:
            row = await repo.by_name(s, "decisions")
        assert row is not None
        return row

    async def entries(self) -> list[IndexEntry]:
        async with self.db.read() as s:
            return list((await s.scalars(select(IndexEntry).order_by(IndexEntry.key))).all())

    async def due_now(self) -> None:
        async with self.db.write() as s:
            row = await repo.by_name(s, "decisions")
            assert row is not None
            row.next_check_at = None


def shown_refs(messages: list[Message]) -> list[int]:
    """The record seqs the last records_read showed."""
    out = next(m.content or "" for m in reversed(messages) if m.name == "records_read")
    return [int(x) for x in REC.findall(out)]


def write_about_what_was_read(key: str, expected_revision: int = 0) -> Any:
    def step(messages: list[Message], _tools: object = None) -> PlannedReply:
        refs = [f"rec-{seq}" for seq in shown_refs(messages)]
        return send("entry_write", {"key": key, "text": "Li decided", "refs": refs,
                                    "expected_revision": expected_revision})  # fmt: skip

    return step


@pytest.fixture
def model() -> ScriptedProvider:
    return ScriptedProvider()


async def test_coverage_moves_only_when_the_range_is_complete(
    db: Database, model: ScriptedProvider
) -> None:
    w = World(db, model)
    await add_records(db, 30)
    await w.create()
    model.add(
        send("records_read", {}),  # 20 of 30
        write_about_what_was_read("li"),
        send("checkpoint", {"complete": False, "note": "more to read"}),
    )
    assert await w.worker.run_once()
    first = await w.index()
    assert first.covered_cursor == 0 and first.status == "updating"
    assert first.range_end is not None and first.range_done is not None
    assert first.pending_count == 10

    model.add(
        send("records_read", {}),  # the last 10
        send("checkpoint", {"complete": True}),  # refused: nothing unread, so it is accepted
    )
    assert await w.worker.run_once()
    done = await w.index()
    assert done.covered_cursor == first.range_end and done.range_end is None
    assert done.pending_count == 0 and done.last_organized_at is not None
    [entry] = await w.entries()
    assert len(entry.refs) == 20

    # The next cycle checks, finds nothing new, and calls no model.
    calls = len(w.recorder.calls)
    assert await w.worker.run_once()
    idle = await w.index()
    assert idle.status == "no_changes_at_last_check" and idle.pending_count == 0
    assert len(w.recorder.calls) == calls
    assert idle.next_check_at is not None and idle.next_check_at > utcnow()
    assert not await w.worker.run_once()  # not due: nothing claimed


async def test_complete_is_refused_while_records_of_the_range_are_unread(
    db: Database, model: ScriptedProvider
) -> None:
    w = World(db, model)
    await add_records(db, 25)
    await w.create()
    model.add(
        send("records_read", {}),
        send("checkpoint", {"complete": True}),  # 5 unread: refused
        send("records_read", {}),
        send("checkpoint", {"complete": True}),
    )
    assert await w.worker.run_once()
    refused = model.requests[2][0][-1].content or ""
    assert "5 records of this range are unread" in refused
    assert (await w.index()).covered_cursor > 0


async def test_an_interrupted_range_resumes_exactly_where_it_was(
    db: Database, model: ScriptedProvider
) -> None:
    w = World(db, model)
    await add_records(db, 45)
    await w.create()
    model.add(send("records_read", {}), send("checkpoint", {"complete": False}))
    assert await w.worker.run_once()
    stopped = await w.index()
    assert stopped.range_done is not None

    # The model fails mid-turn: nothing moves, and the error is shown.
    from bot.llm.types import ModelError

    model.add(send("records_read", {}), ModelError("upstream 502"))
    await w.due_now()
    assert await w.worker.run_once()
    failed = await w.index()
    assert failed.status == "maintenance_failed" and "upstream 502" in (failed.last_error or "")
    assert (failed.range_done, failed.range_end) == (stopped.range_done, stopped.range_end)

    seen: list[list[int]] = []

    def note_refs(messages: list[Message], _tools: object = None) -> PlannedReply:
        seen.append(shown_refs(messages))
        return send("records_read", {})

    model.add(send("records_read", {}), note_refs, send("checkpoint", {"complete": True}))
    await w.due_now()
    assert await w.worker.run_once()
    assert seen[0][0] == stopped.range_done + 1  # resumed right after what was organized
    assert (await w.index()).covered_cursor == stopped.range_end


async def test_a_failed_check_is_shown_as_an_error_and_never_as_no_changes(
    db: Database, model: ScriptedProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = World(db, model)
    await add_records(db, 3)
    async with db.write() as s:  # the owner's DM, where notices go
        await conversations.get_or_create(
            s, platform="feishu", chat_id="oc_owner_dm", chat_type="p2p", peer_open_id=OWNER
        )
    await w.create()

    async def broken(*_args: object, **_kwargs: object) -> object:
        raise OperationalError("SELECT count", {}, Exception("database is locked"))

    monkeypatch.setattr(maintenance.repo, "backlog", broken)
    assert await w.worker.run_once()
    index = await w.index()
    assert index.status == "check_failed" and index.pending_count is None
    assert "database is locked" in (index.last_error or "")
    assert model.requests == []  # no model call for a failed check
    async with db.read() as s:
        notices = (await s.scalars(select(InboxItem).where(InboxItem.kind == "index_notice"))).all()
    [notice] = notices
    assert "could not be kept up to date" in notice.payload["text"]


async def test_a_turn_killed_mid_batch_loses_and_doubles_nothing(
    db: Database, model: ScriptedProvider, tmp_path: Any
) -> None:
    w = World(db, model)
    await add_records(db, 10)
    await w.create()
    blocked = asyncio.Event()

    async def hang(_messages: list[Message], _tools: object) -> PlannedReply:
        blocked.set()
        await asyncio.Event().wait()  # the process is killed here
        raise AssertionError("unreachable")

    model.add(send("records_read", {}), write_about_what_was_read("li"), hang)
    turn = asyncio.create_task(w.worker.run_once())
    await asyncio.wait_for(blocked.wait(), 10)
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    killed = await w.index()
    assert killed.covered_cursor == 0 and killed.range_done is None

    # After the restart the lease has lapsed; the range is read again from its start, and
    # writing the same entry again is a revision conflict the agent resolves by updating.
    async with db.write() as s:
        row = await repo.by_name(s, "decisions")
        assert row is not None
        row.lease_owner = row.lease_expires_at = None
    model.add(
        send("records_read", {}),
        write_about_what_was_read("li"),  # conflict: it exists at revision 1
        write_about_what_was_read("li", expected_revision=1),
        send("checkpoint", {"complete": True}),
    )
    assert await w.worker.run_once()
    [entry] = await w.entries()
    assert entry.revision == 2 and len(entry.refs) == 10
    assert (await w.index()).covered_cursor == killed.range_end or (
        (await w.index()).covered_cursor > 0
    )


async def test_entries_lead_back_to_their_originals_within_what_the_reader_sees(
    db: Database, model: ScriptedProvider, tmp_path: Any
) -> None:
    w = World(db, model)
    await add_records(db, 2)
    await add_records(db, 1, scope="dm:ou_owner", start=100)  # the owner's DM: not the team's
    await w.create()
    async with db.read() as s:
        owner_dm = await record_of(s, "feishu:ou_owner", "om_100")
    assert owner_dm is not None

    def write_with_a_foreign_ref(messages: list[Message], _tools: object = None) -> PlannedReply:
        return send("entry_write", {"key": "x", "text": "y", "refs": [f"rec-{owner_dm.id}"]})

    model.add(
        send("records_read", {}),
        write_with_a_foreign_ref,
        write_about_what_was_read("li"),
        send("checkpoint", {"complete": True}),
    )
    assert await w.worker.run_once()
    refused = model.requests[2][0][-1].content or ""
    assert f"rec-{owner_dm.id} is not a record of this index" in refused
    [entry] = await w.entries()

    search = SearchService(EmbeddedSearchIndex(tmp_path / "index"))
    team = recall.MemoryAccess(db, search, w.team, UTC)
    read = await recall.memory_index_read(team, "decisions", "li")
    assert f"rec-{entry.refs[0]}" in read
    original = await recall.memory_original(team, f"rec-{entry.refs[0]}")
    assert "Li decided item" in original
    elsewhere = Visibility(everything=False, conversation_id=9, scopes=frozenset({"dm:ou_x"}))
    with pytest.raises(ToolError, match="no index named 'decisions' here"):
        await recall.memory_index_read(recall.MemoryAccess(db, search, elsewhere, UTC), "decisions")


async def test_a_ref_or_revision_no_row_can_have_comes_back_to_the_indexer_as_an_error(
    db: Database, model: ScriptedProvider
) -> None:
    w = World(db, model)
    await add_records(db, 1)
    await w.create()
    huge = "9" * 23
    model.add(
        send("records_read", {}),
        send("entry_write", {"key": "x", "text": "y", "refs": [f"rec-{huge}"]}),
        send("entry_write", {"key": "x", "text": "y", "refs": ["rec-١"]}),  # Arabic-Indic 1
        write_about_what_was_read("li", expected_revision=int(huge)),
        write_about_what_was_read("li"),
        send("checkpoint", {"complete": True}),
    )
    assert await w.worker.run_once()
    errors = [model.requests[n][0][-1].content or "" for n in (2, 3, 4)]
    assert f"error: rec-{huge} is not a record of this index\n" in errors[0]
    assert "error: 'rec-١' is not a record ref: use rec-N as records_read shows" in errors[1]
    assert "error: invalid arguments: expected_revision: Input should be less" in errors[2]
    assert [e.key for e in await w.entries()] == ["li"]
    assert (await w.index()).covered_cursor > 0


async def test_a_turn_that_raises_is_recorded_and_not_run_again_until_the_retry(
    db: Database, model: ScriptedProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, the exception left the index due, and every cycle ran the turn again."""
    w = World(db, model)
    await add_records(db, 3)
    await w.create()
    turns: list[int] = []

    async def raising_turn(_self: IndexerTurn, index: MemoryIndex, _ctx: object) -> object:
        turns.append(index.id)
        raise OverflowError("value out of int64 range")

    monkeypatch.setattr(IndexerTurn, "run", raising_turn)
    assert await w.worker.run_once()
    for _ in range(5):  # the cycles a busy loop would run next: none finds the index due
        assert not await w.worker.run_once()
    index = await w.index()
    assert len(turns) == 1
    assert index.status == "maintenance_failed"
    assert index.last_error == "OverflowError: value out of int64 range"
    assert index.next_check_at is not None and index.next_check_at > utcnow()
