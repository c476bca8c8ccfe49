"""A task Session's state follows its Matter (active, waiting, blocked, done, cancelled), so
routing shows where each task stands: a finished task stays a candidate (for "that one I
finished"), as done, until it has been quiet for MAKA_TASK_ARCHIVE_AFTER; then it is archived
and is no candidate. Input after the objective is kept as amendments, reviewer rejections
are counted. Both databases."""

from __future__ import annotations

from datetime import UTC, timedelta
from pathlib import Path

from sqlalchemy import select

from bot.assistant.access import Role
from bot.assistant.visibility import Visibility
from bot.host.notify import Notifier
from bot.llm.client import MemoryRecorder, ModelClient
from bot.llm.scripted import ScriptedProvider
from bot.matters.rules import Disposition, SettleRequest
from bot.matters.service import MatterService, wake_matter
from bot.memory.search import SearchService
from bot.workhub.service import Requester, WorkHub
from bot.workhub.summaries import SummaryWorker
from storage.db import Database
from storage.models import InboxItem, Matter, Session, Timer
from storage.repos import matters
from storage.search.embedded import EmbeddedSearchIndex
from storage.types import utcnow
from tests.seed import OWNER, owner_dm, task_session


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def delegate(db: Database, request: str, name: str = "task") -> tuple[int, int]:
    """A task Session with a delegated request, adopted as a Matter: (session id, matter id)."""
    now = utcnow()
    async with db.write() as s:
        conv = await owner_dm(s)
        task = await task_session(s, conv, name)
        s.add(delegation(task.id, conv.id, request, "first"))
        await s.flush()
        matter = await matters.adopt(s, task.id, now)
        assert matter is not None
        return task.id, matter.id


def delegation(session_id: int, conversation_id: int, request: str, key: str) -> InboxItem:
    return InboxItem(
        session_id=session_id,
        kind="delegation",
        created_at=utcnow(),
        payload={"request": request, "from": OWNER, "conversation_id": conversation_id},
        dedupe_key=f"test:{session_id}:{key}",
    )


async def header(db: Database, session_id: int) -> Session:
    async with db.read() as s:
        row = await s.get(Session, session_id)
    assert row is not None
    return row


async def unread(db: Database, session_id: int) -> list[int]:
    async with db.read() as s:
        return [i.id for i in await matters.unread_items(s, session_id)]


async def test_the_task_session_state_follows_its_matter(db: Database) -> None:
    service = MatterService(db, Notifier())
    sid, mid = await delegate(db, "watch the nightly build")
    assert (await header(db, sid)).state == "active"
    read = await unread(db, sid)

    wake = utcnow() + timedelta(hours=1)
    request = SettleRequest(0, Disposition.WAIT, "r", "s", (wake,), "the build")
    await service.settle(mid, request, read_item_ids=read, result_reported=True)
    waiting = await header(db, sid)
    assert waiting.state == "waiting"

    async with db.write() as s:  # the wake falls due
        timer = await s.scalar(select(Timer).where(Timer.key == f"matter:{mid}"))
        assert timer is not None
        await wake_matter(s, timer)
    assert (await header(db, sid)).state == "active"

    assert await service.pause(mid, "the model failed", report=False)
    blocked = await header(db, sid)
    assert blocked.state == "blocked"
    assert blocked.status_updated_at is not None and waiting.status_updated_at is not None
    assert blocked.status_updated_at >= waiting.status_updated_at

    assert await service.resume(mid)
    assert (await header(db, sid)).state == "active"
    done = SettleRequest(1, Disposition.COMPLETE, "r", "the build is green")
    await service.settle(mid, done, read_item_ids=[], result_reported=True)
    assert (await header(db, sid)).state == "done"

    other, other_matter = await delegate(db, "something else", "other")
    assert await service.cancel(other_matter)
    assert (await header(db, other)).state == "cancelled"


async def candidates_of(db: Database, tmp_path: Path) -> list[tuple[str, str]]:
    """(name, state) of the owner's DM candidates, in order."""
    async with db.read() as s:
        conv = await owner_dm(s)
    hub = WorkHub(db, Notifier(), SearchService(EmbeddedSearchIndex(tmp_path / "idx")), tz=UTC)
    everything = Visibility(everything=True, conversation_id=conv.id)
    requester = Requester(conv.id, OWNER, Role.OWNER, everything)
    cset = await hub.candidates(requester)
    return [(c.meta.name, c.meta.state) for c in cset.candidates]


async def test_a_finished_task_stays_a_candidate_shown_as_done(
    db: Database, tmp_path: Path
) -> None:
    service = MatterService(db, Notifier())
    sid, mid = await delegate(db, "rotate the api keys", "api keys")
    before = await candidates_of(db, tmp_path)
    assert before == [("api keys", "active")]
    request = SettleRequest(0, Disposition.COMPLETE, "r", "rotated")
    await service.settle(mid, request, read_item_ids=await unread(db, sid), result_reported=True)
    assert await candidates_of(db, tmp_path) == [("api keys", "done")]


async def finished_long_ago(db: Database, name: str, state: str, quiet: timedelta) -> int:
    async with db.write() as s:
        conv = await owner_dm(s)
        row = await task_session(s, conv, name, last_message_at=utcnow() - quiet)
        row.state = state
        return row.id


async def test_finished_tasks_quiet_past_the_archive_time_are_archived_and_no_candidates(
    db: Database, tmp_path: Path
) -> None:
    month = timedelta(days=30)
    await finished_long_ago(db, "old done", "done", month + timedelta(days=1))
    await finished_long_ago(db, "old cancelled", "cancelled", month + timedelta(days=1))
    await finished_long_ago(db, "recent done", "done", timedelta(days=2))
    await finished_long_ago(db, "old but waiting", "waiting", month + timedelta(days=1))
    clock = Clock()
    worker = SummaryWorker(
        db,
        ModelClient(ScriptedProvider(), MemoryRecorder()),
        SearchService(EmbeddedSearchIndex(tmp_path / "idx")),
        "me",
        archive_after=month,
        clock=clock,
    )
    assert not await worker.run_once()  # no summary to refresh; the archiving step ran
    async with db.read() as s:
        archived = dict((await s.execute(select(Session.name, Session.is_archived))).all())
    assert archived == {
        "old done": True,
        "old cancelled": True,
        "recent done": False,
        "old but waiting": False,  # work still stands: never archived for quiet alone
    }
    assert sorted(await candidates_of(db, tmp_path)) == [
        ("old but waiting", "waiting"),
        ("recent done", "done"),
    ]
    await finished_long_ago(db, "another old one", "done", month + timedelta(days=1))
    await worker.run_once()
    assert ("another old one", "done") in await candidates_of(db, tmp_path)  # not hourly yet
    clock.now += 3600
    await worker.run_once()
    assert ("another old one", "done") not in await candidates_of(db, tmp_path)


async def test_input_after_the_objective_is_kept_as_amendments_once(db: Database) -> None:
    service = MatterService(db, Notifier())
    sid, mid = await delegate(db, "book a room for the offsite")
    async with db.write() as s:
        conv = await owner_dm(s)
        s.add(delegation(sid, conv.id, "make it for 12 people, not 8", "second"))
    read = await unread(db, sid)
    request = SettleRequest(0, Disposition.CONTINUE, "r", "looking")
    await service.settle(mid, request, read_item_ids=read, result_reported=True)
    again = await service.settle(mid, request, read_item_ids=read, result_reported=True)
    assert again.converged
    async with db.read() as s:
        matter = await s.get(Matter, mid)
    assert matter is not None and matter.objective == "book a room for the offsite"
    assert [a["text"] for a in matter.amendments] == ["make it for 12 people, not 8"]
    assert matter.amendments[0]["item_id"] == read[1]


async def test_reviewer_rejections_are_counted_without_a_new_revision(db: Database) -> None:
    service = MatterService(db, Notifier())
    _sid, mid = await delegate(db, "reconcile the invoices")
    assert await service.record_rejection(mid) == 1
    assert await service.record_rejection(mid) == 2
    async with db.read() as s:
        matter = await s.get(Matter, mid)
    assert matter is not None and matter.rejection_count == 2 and matter.revision == 0


async def test_a_done_task_given_new_input_is_active_while_it_works(
    db: Database, tmp_path: Path
) -> None:
    service = MatterService(db, Notifier())
    sid, mid = await delegate(db, "rotate the api keys", "api keys")
    done = SettleRequest(0, Disposition.COMPLETE, "r", "rotated")
    await service.settle(mid, done, read_item_ids=await unread(db, sid), result_reported=True)
    assert await candidates_of(db, tmp_path) == [("api keys", "done")]
    async with db.write() as s:
        conv = await owner_dm(s)
        s.add(delegation(sid, conv.id, "rotate the staging keys too", "follow-up"))

    async with db.write() as s:  # the worker takes it for a turn
        claimed = await matters.claim_runnable(
            s, owner="worker", now=utcnow(), lease=timedelta(minutes=5)
        )
    assert claimed is not None and claimed.id == mid
    assert claimed.status == "active"
    assert await candidates_of(db, tmp_path) == [("api keys", "active")]

    again = SettleRequest(1, Disposition.COMPLETE, "r", "staging rotated too")
    await service.settle(mid, again, read_item_ids=await unread(db, sid), result_reported=True)
    assert await candidates_of(db, tmp_path) == [("api keys", "done")]
