"""Invariants 6 to 9 against the database: the Action Gate, completion counts, summaries."""

from __future__ import annotations

from datetime import UTC, timedelta
from pathlib import Path

from sqlalchemy import func, select

from bot.assistant.access import Role
from bot.assistant.visibility import Visibility
from bot.config import EvidenceStrategy
from bot.host.notify import Notifier
from bot.llm.client import MemoryRecorder, ModelClient
from bot.llm.scripted import ScriptedProvider
from bot.llm.types import Message, ToolSpec
from bot.matters.service import MatterService
from bot.memory.search import SearchService
from bot.memory.session_index import SessionIndexer, SessionIndexWorker
from bot.workhub.service import Refusal, Requester, WorkHub
from bot.workhub.summaries import SummaryWorker, record_completion
from storage.db import Database
from storage.models import Conversation, InboxItem, Matter, Session, SessionSummary
from storage.repos import matters, operations, sessions, workhub
from storage.search import SearchFilters
from storage.search.embedded import EmbeddedSearchIndex
from storage.types import utcnow
from tests.memory.test_session_search import BrokenIndex

OWNER = "ou_owner"


async def _seed(db: Database, n: int = 3) -> tuple[Requester, list[int]]:
    now = utcnow()
    async with db.write() as s:
        conv = Conversation(
            platform="feishu",
            chat_id="oc_owner",
            chat_type="p2p",
            peer_open_id=OWNER,
            listen_all=False,
            created_at=now,
        )
        s.add(conv)
        await s.flush()
        rows = [
            Session(
                name=f"task {i}",
                workspace="infra",
                state="active",
                labels=[],
                is_archived=False,
                conversation_id=conv.id,
                created_by=OWNER,
                created_at=now - timedelta(days=1),
                last_message_at=now - timedelta(minutes=10 * i),
            )
            for i in range(n)
        ]
        s.add_all(rows)
        await s.flush()
        owner_dm = Visibility(everything=True, conversation_id=conv.id)
        return Requester(conv.id, OWNER, Role.OWNER, owner_dm), [r.id for r in rows]


def _hub(db: Database, tmp_path: Path, index: object | None = None) -> WorkHub:
    search = SearchService(index or EmbeddedSearchIndex(tmp_path / "idx"))  # type: ignore[arg-type]
    return WorkHub(
        db,
        Notifier(),
        search,
        tz=utcnow().tzinfo,  # type: ignore[arg-type]
        strategy=EvidenceStrategy.BEST_MESSAGE,
    )


async def _inbox_of(db: Database, session_id: int) -> list[InboxItem]:
    async with db.read() as s:
        return list(
            (await s.scalars(select(InboxItem).where(InboxItem.session_id == session_id))).all()
        )


async def test_a_stale_set_and_an_unknown_ref_are_refused_and_nothing_is_written(
    db: Database, tmp_path: Path
) -> None:
    requester, ids = await _seed(db)
    hub = _hub(db, tmp_path)
    cset = await hub.candidates(requester)
    async with db.write() as s:  # activity moves: the set the model saw is stale now
        row = await s.get(Session, ids[2])
        assert row is not None
        row.last_message_at = utcnow()
    stale = await hub.delegate(
        requester,
        action_id="a1",
        candidate_set_id=cset.set_id,
        candidate_ref=cset.candidates[0].ref,
        payload={"request": "x"},
    )
    fresh = await hub.candidates(requester)
    unknown = await hub.delegate(
        requester,
        action_id="a2",
        candidate_set_id=fresh.set_id,
        candidate_ref="t_nothere",
        payload={"request": "x"},
    )
    assert stale.refusal is Refusal.STALE and unknown.refusal is Refusal.UNAVAILABLE
    for sid in ids:
        assert await _inbox_of(db, sid) == []


async def test_a_message_routed_to_a_cancelled_task_is_refused_and_nothing_is_written(
    db: Database, tmp_path: Path
) -> None:
    requester, ids = await _seed(db)
    cancelled = ids[1]
    async with db.write() as s:
        s.add(
            InboxItem(
                session_id=cancelled,
                kind="delegation",
                payload={
                    "request": "migrate the cache",
                    "conversation_id": requester.conversation_id,
                },
                dedupe_key="first",
                created_at=utcnow(),
            )
        )
        await s.flush()
        matter = await matters.adopt(s, cancelled, utcnow())
        assert matter is not None
    assert await MatterService(db, Notifier()).cancel(matter.id)
    hub = _hub(db, tmp_path)
    cset = await hub.candidates(requester)
    target = next(c for c in cset.candidates if c.meta.id == str(cancelled))
    assert target.meta.state == "cancelled"  # still a candidate, shown as cancelled
    async with db.read() as s:
        log_before = await sessions.events_after(s, cancelled, 0, ("user",))

    result = await hub.delegate(
        requester,
        action_id="turn-9:delegate:1",
        candidate_set_id=cset.set_id,
        candidate_ref=target.ref,
        payload={"request": "also warm it up after"},
    )

    assert not result.ok and result.refusal is Refusal.CANCELLED
    assert "'task 1' was cancelled and takes no follow-ups" in result.detail
    assert "new task only if their words ask for one" in result.detail
    items = await _inbox_of(db, cancelled)
    assert [i.payload["request"] for i in items] == ["migrate the cache"]  # nothing new
    async with db.read() as s:
        assert await operations.get(s, "turn-9:delegate:1") is None
        assert await sessions.events_after(s, cancelled, 0, ("user",)) == log_before
    other = next(c for c in cset.candidates if c.meta.id == str(ids[2]))
    taken = await hub.delegate(  # the same set still routes to a task that is not cancelled
        requester,
        action_id="turn-9:delegate:2",
        candidate_set_id=cset.set_id,
        candidate_ref=other.ref,
        payload={"request": "also warm it up after"},
    )
    assert taken.ok and taken.session_id == ids[2]


async def test_a_task_cannot_route_to_itself(db: Database, tmp_path: Path) -> None:
    requester, _ = await _seed(db)
    hub = _hub(db, tmp_path)
    cset = await hub.candidates(requester)
    me = Requester(**{**requester.__dict__, "origin_session_id": int(cset.candidates[0].meta.id)})
    result = await hub.delegate(
        me,
        action_id="a1",
        candidate_set_id=cset.set_id,
        candidate_ref=cset.candidates[0].ref,
        payload={"request": "x"},
    )
    assert result.refusal is Refusal.SELF_ROUTE


async def test_a_retried_delegation_converges_and_a_conflicting_reuse_is_refused(
    db: Database, tmp_path: Path
) -> None:
    requester, _ = await _seed(db)
    hub = _hub(db, tmp_path)
    cset = await hub.candidates(requester)
    target = cset.candidates[1]
    args = {
        "action_id": "turn-7:delegate:1",
        "candidate_set_id": cset.set_id,
        "candidate_ref": target.ref,
        "payload": {"request": "ship it"},
    }
    first = await hub.delegate(requester, **args)  # type: ignore[arg-type]
    again = await hub.delegate(requester, **args)  # type: ignore[arg-type]
    other = await hub.delegate(requester, **{**args, "candidate_ref": cset.candidates[2].ref})  # type: ignore[arg-type]
    assert first.ok and not first.converged
    assert again.ok and again.converged and again.session_id == first.session_id
    assert other.refusal is Refusal.CONFLICT
    items = await _inbox_of(db, int(target.meta.id))
    assert [i.payload["request"] for i in items] == ["ship it"]


async def test_a_repeated_terminal_notification_counts_once_and_refreshes_at_powers_of_two(
    db: Database,
) -> None:
    _, ids = await _seed(db, 1)
    notifier = Notifier()
    assert await record_completion(db, notifier, ids[0], "turn-1") == 1
    assert await record_completion(db, notifier, ids[0], "turn-1") is None
    requested: list[int] = []
    for n in range(2, 18):
        await record_completion(db, notifier, ids[0], f"turn-{n}")
        async with db.read() as s:
            row = await s.get(SessionSummary, ids[0])
            assert row is not None
            if row.requested_at_count not in requested:
                requested.append(row.requested_at_count)
    assert requested == [2, 4, 8, 16]
    async with db.read() as s:
        row = await s.get(SessionSummary, ids[0])
    assert row is not None and row.completion_count == 17


async def test_a_summary_refresh_never_moves_activity_and_never_goes_back(
    db: Database, tmp_path: Path
) -> None:
    _, ids = await _seed(db, 1)
    sid = ids[0]
    async with db.write() as s:
        await sessions.append_events(
            s,
            sid,
            [("user", "deploy ws.ts with retries", None), ("assistant", "deployed", None)],
            utcnow(),
        )
        before = await s.get(Session, sid)
        assert before is not None
        activity = (before.last_message_at, before.status_updated_at)
    await record_completion(db, Notifier(), sid, "turn-1")
    provider = ScriptedProvider([ScriptedProvider.text("Deploys ws.ts with retries.")])
    worker = SummaryWorker(
        db,
        ModelClient(provider, MemoryRecorder()),
        SearchService(EmbeddedSearchIndex(tmp_path / "idx")),
        "me",
    )
    assert await worker.run_once()
    assert not await worker.run_once()  # coalesced: nothing left to refresh
    async with db.write() as s:
        after = await s.get(Session, sid)
        summary = await s.get(SessionSummary, sid)
        older = await workhub.store_summary(
            s, sid, "me", text="old", covered_seq=0, for_count=1, now=utcnow()
        )
    assert after is not None and (after.last_message_at, after.status_updated_at) == activity
    assert summary is not None and summary.text == "Deploys ws.ts with retries."
    assert summary.covered_seq == 2 and not older


async def test_a_search_failure_leaves_routing_on_metadata(db: Database, tmp_path: Path) -> None:
    requester, ids = await _seed(db)
    hub = _hub(db, tmp_path, BrokenIndex())
    cset = await hub.candidates(requester, query="ws.ts")
    assert cset.evidence_status == "unavailable"
    assert sorted(int(c.meta.id) for c in cset.candidates) == sorted(ids)
    assert all(c.evidence is None for c in cset.candidates)


async def test_candidates_in_a_group_are_only_that_groups_and_the_owners_dm_sees_all(
    db: Database, tmp_path: Path
) -> None:
    requester, ids = await _seed(db)
    async with db.write() as s:
        group = Conversation(
            platform="feishu",
            chat_id="oc_team",
            chat_type="group",
            listen_all=False,
            created_at=utcnow(),
        )
        s.add(group)
        await s.flush()
        s.add(
            Session(
                name="team task",
                state="active",
                labels=[],
                is_archived=False,
                conversation_id=group.id,
                created_by="ou_member",
                created_at=utcnow(),
            )
        )
        group_id = group.id
    hub = _hub(db, tmp_path)
    group_only = Visibility(everything=False, conversation_id=group_id)
    in_group = await hub.candidates(Requester(group_id, "ou_member", Role.USER, group_only))
    in_dm = await hub.candidates(requester)
    assert [c.meta.name for c in in_group.candidates] == ["team task"]
    assert sorted(c.meta.name for c in in_dm.candidates) == sorted(
        ["team task", *(f"task {i}" for i in range(len(ids)))]
    )
    async with db.read() as s:
        assert await s.scalar(select(func.count(Session.id))) == len(ids) + 1


async def test_the_users_words_handed_to_a_task_are_its_log_and_searchable(
    db: Database, tmp_path: Path
) -> None:
    requester, _ = await _seed(db)
    search, notifier = SearchService(EmbeddedSearchIndex(tmp_path / "idx")), Notifier()
    hub = WorkHub(db, notifier, search, tz=UTC)
    follower = SessionIndexWorker(db, SessionIndexer(db, search), "me")
    cset = await hub.candidates(requester)
    target = cset.candidates[1]
    with notifier.subscribe(SessionIndexWorker.topics) as follower_woken:
        done = await hub.delegate(
            requester,
            action_id="a1",
            candidate_set_id=cset.set_id,
            candidate_ref=target.ref,
            payload={"request": "also check the ERR_CONN_RESET on 灰度环境"},
        )
        assert done.ok
        assert follower_woken.event.is_set()  # the search follower is told at once
    assert await follower.run_once()
    async with db.read() as s:
        log = await sessions.events_after(s, int(target.meta.id), 0, ("user",))
    assert [e.text for e in log] == ["also check the ERR_CONN_RESET on 灰度环境"]
    hits = await search.search("灰度", SearchFilters(session_ids=[target.meta.id]))
    assert [h.session_id for h in hits] == [target.meta.id]


async def test_a_request_on_another_topic_makes_the_next_completion_refresh_the_summary(
    db: Database, tmp_path: Path
) -> None:
    requester, ids = await _seed(db, 1)
    sid = ids[0]
    notifier = Notifier()
    for n in (1, 2, 3):  # refreshes at 1 and 2; 3 is no point of the schedule
        await record_completion(db, notifier, sid, f"turn-{n}")
    async with db.write() as s:
        await workhub.store_summary(
            s, sid, "me", text="Redis timeouts on staging; ERR_CONN_RESET.", covered_seq=0,
            for_count=2, now=utcnow(),
        )  # fmt: skip
    hub = _hub(db, tmp_path)
    cset = await hub.candidates(requester)
    for i, request in enumerate(("the redis timeout again", "renew the docs SSL certificate")):
        await hub.delegate(
            requester,
            action_id=f"d{i}",
            candidate_set_id=(await hub.candidates(requester)).set_id,
            candidate_ref=cset.candidates[0].ref,
            payload={"request": request},
        )
        async with db.read() as s:
            row = await s.get(SessionSummary, sid)
            assert row is not None
            assert row.stale is (i == 1)  # only the request on another topic
    await record_completion(db, notifier, sid, "turn-4")  # a schedule point anyway
    await record_completion(db, notifier, sid, "turn-5")
    async with db.read() as s:
        row = await s.get(SessionSummary, sid)
    assert row is not None and row.requested_at_count == 4 and not row.stale
    async with db.write() as s:  # stale again: turn 6 is no schedule point, yet refreshes
        await workhub.mark_stale(s, sid)
    await record_completion(db, notifier, sid, "turn-6")
    async with db.read() as s:
        row = await s.get(SessionSummary, sid)
    assert row is not None and row.requested_at_count == 6 and not row.stale


async def test_the_summary_is_written_from_the_objective_and_the_tasks_own_log(
    db: Database, tmp_path: Path
) -> None:
    _, ids = await _seed(db, 1)
    sid = ids[0]
    async with db.write() as s:
        s.add(
            Matter(
                session_id=sid, objective="Keep the nightly export under 10 minutes",
                amendments=[], wakes=[], work_record=[], status="active",
                created_at=utcnow(), updated_at=utcnow(),
            )
        )  # fmt: skip
        await sessions.append_events(s, sid, [("user", "it took 14 minutes today", None)], utcnow())
    await record_completion(db, Notifier(), sid, "turn-1")
    seen: list[str] = []

    def summarize(messages: list[Message], _tools: list[ToolSpec]) -> object:
        seen.append(messages[-1].content or "")
        return ScriptedProvider.text("Nightly export speed; 14 minutes today.")

    worker = SummaryWorker(
        db,
        ModelClient(ScriptedProvider([summarize]), MemoryRecorder()),
        SearchService(EmbeddedSearchIndex(tmp_path / "idx")),
        "me",
    )
    assert await worker.run_once()
    [prompt] = seen
    assert "Keep the nightly export under 10 minutes" in prompt
    assert "it took 14 minutes today" in prompt


async def test_a_summary_that_raises_is_recorded_and_not_tried_again_until_its_retry(
    db: Database, tmp_path: Path
) -> None:
    """Before, anything but a model error left the job claimed and unrecorded until its
    lease lapsed, and then it ran again; now it is postponed with its error, as a model
    error is."""
    _, ids = await _seed(db, 1)
    sid = ids[0]
    async with db.write() as s:
        await sessions.append_events(s, sid, [("user", "it took 14 minutes today", None)], utcnow())
    await record_completion(db, Notifier(), sid, "turn-1")
    calls: list[int] = []

    def raising(_messages: list[Message], _tools: list[ToolSpec]) -> object:
        calls.append(1)
        raise OverflowError("value out of int64 range")

    worker = SummaryWorker(
        db,
        ModelClient(ScriptedProvider([raising] * 5), MemoryRecorder()),
        SearchService(EmbeddedSearchIndex(tmp_path / "idx")),
        "me",
    )
    assert await worker.run_once()
    for _ in range(3):  # the cycles a loop would run next: the job is not due
        assert not await worker.run_once()
    async with db.read() as s:
        row = await s.get(SessionSummary, sid)
    assert len(calls) == 1
    assert row is not None and "value out of int64 range" in (row.last_error or "")
