"""Durable work: waits survive restarts, settles follow the rules, review can say no (and a
reviewer that gives no verdict pauses the Matter instead of looping)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select, update

from bot.assistant.component import Assistant
from bot.llm.types import Message
from bot.matters.rules import Disposition, SettleRequest
from bot.matters.service import TOPIC as MATTERS_TOPIC
from bot.matters.service import MatterService
from bot.matters.turn import MatterTurn
from storage.db import create_database
from storage.models import InboxItem, Matter, Timer
from storage.repos import sessions
from storage.types import utcnow
from tests.assistant.support import (
    all_delivered,
    answers_sent,
    last_user_text,
    quiet,
    replies,
    say,
    say_in_group,
    without_why,
)
from tests.feishu_world import OWNER, FeishuWorld, WorldFactory
from tests.matters.routed_model import APPROVE, RoutedModel, reject, send, text
from tests.seed import owner_dm, task_session
from tests.waiting import wait_until


async def _delegate(w: FeishuWorld, request: str, name: str = "task") -> int:
    """A task Session with a delegated request in its inbox (as tasks_create leaves it)."""
    now = utcnow()
    async with w.app.services.db.write() as s:
        conv = await owner_dm(s)
        task = await task_session(s, conv, name)
        s.add(
            InboxItem(
                session_id=task.id,
                kind="delegation",
                created_at=now,
                payload={"request": request, "from": OWNER, "conversation_id": conv.id},
                dedupe_key=f"test:{task.id}",
            )
        )
        return task.id


async def _matter(w: FeishuWorld, session_id: int) -> Matter | None:
    async with w.app.services.db.read() as s:
        return await s.scalar(select(Matter).where(Matter.session_id == session_id))


async def _status(w: FeishuWorld, session_id: int, status: str) -> None:
    async def reached() -> bool:
        m = await _matter(w, session_id)
        return m is not None and m.status == status

    await wait_until(reached, timeout=30)


def _settle(revision: int, disposition: str, **kw: Any) -> Any:
    return send(
        "settle",
        {
            "expected_revision": revision,
            "disposition": disposition,
            "reason": kw.pop("reason", "r"),
            "summary": kw.pop("summary", "s"),
            **kw,
        },
    )


async def test_a_wait_survives_downtime_fires_once_and_the_user_hears_the_result_once(
    make_world: WorldFactory, database_url: str
) -> None:
    model = RoutedModel()

    def wait_an_hour(_messages: list[Message]) -> Any:
        # Set when the agent asks, far enough ahead that no start-up or review delay on a
        # busy machine can turn it into "a wake in the past".
        wake_at = utcnow() + timedelta(hours=1)
        return _settle(0, "wait", wakes=[wake_at.isoformat()], waiting_for="the nightly report")

    model.add("agent", send("events_read", {}), wait_an_hour)
    model.add("review", APPROVE)
    async with make_world(bot=Assistant(), model_provider=model, bot_debounce=0.0) as w:
        session_id = await _delegate(w, "check the nightly report when it is ready")
        await _status(w, session_id, "waiting")
    # The process is down when the wake falls due: the test moves the stored wake into the
    # past instead of sleeping through it (and racing the clock).
    db = create_database(database_url)
    try:
        async with db.write() as s:
            moved = await s.execute(
                update(Timer)
                .where(Timer.kind == "matter_wake", Timer.state == "pending")
                .values(due_at=utcnow() - timedelta(seconds=1))
            )
            assert getattr(moved, "rowcount", 0) == 1, "the wait left no pending wake"
    finally:
        await db.dispose()
    model.add("agent", _settle(1, "complete", summary="the nightly report is fine"))
    model.add("review", APPROVE)

    def tell_user(messages: list[Message]) -> Any:
        assert "the nightly report is fine" in (messages[-1].content or "")
        return send("send_user", {"text": "Your nightly report is fine."})

    model.add("bot", tell_user, send("sleep", {}))
    async with make_world(
        bot=Assistant(), model_provider=model, bot_debounce=0.0, name="restarted"
    ) as w2:
        await _status(w2, session_id, "completed")
        assert [without_why(r) for r in await replies(w2, 1)] == ["Your nightly report is fine."]
        await quiet(w2)  # as replies did: a second telling would have been sent by now
        assert len(answers_sent(w2)) == 1
        await all_delivered(w2)
        async with w2.app.services.db.read() as s:
            timer = await s.scalar(select(Timer).where(Timer.kind == "matter_wake"))
            matter = await s.scalar(select(Matter).where(Matter.session_id == session_id))
            task_log = await sessions.events_after(s, session_id, 0, ("assistant",))
    assert timer is not None and timer.state == "fired"
    # what the user was told about the task is in the task's own log
    assert [e.text for e in task_log if (e.payload or {}).get("told_user")] == [
        "Your nightly report is fine."
    ]
    assert matter is not None and matter.run_count == 2 and matter.wakes == []
    assert model.calls["agent"] == 3


async def test_complete_with_unread_events_is_refused_and_a_rejection_makes_the_agent_go_on(
    make_world: WorldFactory,
) -> None:
    model = RoutedModel()
    seen: list[str] = []

    def note(messages: list[Message]) -> Any:
        seen.append(messages[-1].content or "")
        return seen_next.pop(0)

    seen_next = [
        _settle(0, "complete"),  # after the refusal below: not read yet -> refused again
        send("events_read", {}),
        _settle(0, "complete", summary="done"),  # the reviewer rejects this one
        send("checkpoint", {"state": "verified the numbers"}),
        _settle(1, "complete", summary="done and verified"),
    ]
    model.add("agent", _settle(0, "complete"), *([note] * len(seen_next)))
    model.add("review", reject("you did not verify the numbers"), APPROVE)
    async with make_world(bot=Assistant(), model_provider=model, bot_debounce=0.0) as w:
        model.add("bot", send("sleep", {}))
        session_id = await _delegate(w, "reconcile the invoices")
        await _status(w, session_id, "completed")
        matter = await _matter(w, session_id)
    assert "unread event" in seen[0]
    assert any("rejected by the reviewer: you did not verify the numbers" in s for s in seen)
    assert matter is not None and matter.revision == 2  # a checkpoint and one settle
    assert [r["summary"] for r in matter.work_record] == ["done and verified"]


async def test_the_same_settle_retried_is_applied_once(make_world: WorldFactory) -> None:
    model = RoutedModel()
    model.add(
        "agent",
        send("events_read", {}),
        _settle(0, "continue", summary="step one"),
        send("events_read", {}),
    )
    async with make_world(bot=Assistant(), model_provider=model, bot_debounce=0.0) as w:
        session_id = await _delegate(w, "a long job")
        await wait_until(lambda: _revision_is(w, session_id, 1), timeout=30)
        matter = await _matter(w, session_id)
        assert matter is not None
        service = MatterService(w.app.services.db, w.app.services.notifier)
        again = await service.settle(
            matter.id,
            SettleRequest(0, Disposition.CONTINUE, "r", "step one"),
            read_item_ids=[],
            result_reported=False,
        )
        after = await _matter(w, session_id)
    assert again.converged and after is not None and after.revision == 1
    assert len(after.work_record) == 1


async def _revision_is(w: FeishuWorld, session_id: int, revision: int) -> bool:
    m = await _matter(w, session_id)
    return m is not None and m.revision == revision


async def test_the_bot_answers_a_new_dm_while_two_matters_run(make_world: WorldFactory) -> None:
    model = RoutedModel()
    release = asyncio.Event()

    async def busy(_messages: list[Message]) -> Any:
        await release.wait()
        return send("events_read", {})

    model.add("agent", busy, busy)
    async with make_world(bot=Assistant(), model_provider=model, bot_debounce=0.0) as w:
        await _delegate(w, "crawl the wiki", "wiki")
        await _delegate(w, "rebuild the index", "index")
        await wait_until(lambda: _running(w, 2), timeout=30)
        model.add("bot", send("send_user", {"text": "I'm here"}), send("sleep", {}))
        await say(w, "are you still there?")
        assert await replies(w, 1) == ["I'm here"]
        assert await _running(w, 2)  # both Matters are still mid-turn
        release.set()


async def _running(w: FeishuWorld, n: int) -> bool:
    async with w.app.services.db.read() as s:
        count = await s.scalar(
            select(func.count(Matter.id)).where(Matter.running_since.is_not(None))
        )
    return count == n


async def test_matters_commands_steer_a_task_for_its_owner_and_refuse_others(
    make_world: WorldFactory,
) -> None:
    async with make_world(bot=Assistant(), model_provider=None, bot_debounce=0.0) as w:
        session_id = await _delegate(w, "watch the deploy")
        async with w.app.services.db.write() as s:
            s.add(
                Matter(
                    session_id=session_id,
                    requested_by=OWNER,
                    objective="watch the deploy",
                    amendments=[{"item_id": 0, "text": "and the canary too"}],
                    rejection_count=2,
                    wakes=[],
                    work_record=[],
                    status="active",
                    created_at=utcnow(),
                    updated_at=utcnow(),
                )
            )
        matter = await _matter(w, session_id)
        assert matter is not None
        await say(w, "/matters list")
        await say(w, f"/matters pause {matter.id}")
        await say(w, f"/matters show {matter.id}")
        await say(w, f"/matters resume {matter.id}")
        await say(w, "/matters pause banana")
        await say_in_group(w, f"/matters cancel {matter.id}", sender="ou_stranger")
        await replies(w, 6)
        # `/matters show` answers with a card: its JSON, where the others are text
        answers = [m.text or m.content for m in answers_sent(w) if m.chat_id == "oc_owner_dm"]
        [refusal] = [m.text for m in answers_sent(w) if m.chat_id == "oc_group"]
        after = await _matter(w, session_id)
    assert f"#{matter.id} active: watch the deploy" in answers[0]
    assert answers[1] == f"Task #{matter.id}: paused."
    assert "**paused**" in answers[2] and f"/matters resume {matter.id}" in answers[2]
    assert "amended: and the canary too" in answers[2]
    assert "reviewer rejections: 2" in answers[2]
    assert answers[3] == f"Task #{matter.id}: resumed."
    assert answers[4].startswith("Usage: /matters")
    # the owner's task does not exist as far as a group can tell
    assert refusal == f"No task #{matter.id}."
    assert after is not None and after.status == "active"


def _wait_later(revision: int, waiting_for: str = "the build") -> Any:
    """A wait settle whose wake is set when the agent asks (an hour ahead: never "past")."""

    def step(_messages: list[Message]) -> Any:
        wake_at = utcnow() + timedelta(hours=1)
        return _settle(revision, "wait", wakes=[wake_at.isoformat()], waiting_for=waiting_for)

    return step


def _noting(seen: list[list[Message]], reply: Any) -> Any:
    """A scripted step that keeps what the model was asked."""

    def step(messages: list[Message]) -> Any:
        seen.append(messages)
        return reply(messages) if callable(reply) else reply

    return step


async def test_a_reviewer_without_a_verdict_is_asked_again_then_the_matter_pauses_visibly(
    make_world: WorldFactory,
) -> None:
    model = RoutedModel()
    asked: list[list[Message]] = []
    bot_saw: list[str] = []
    model.add("agent", send("events_read", {}), _settle(0, "complete", summary="all done"))
    # Free text is never read as a verdict, however approving it looks.
    model.add(
        "review",
        _noting(asked, text("**APPROVE**")),
        _noting(asked, text("Verdict: approve")),
    )

    def tell_user(messages: list[Message]) -> Any:
        bot_saw.append(last_user_text(messages))
        return send("send_user", {"text": "Your invoice task is paused: its check failed."})

    model.add("bot", tell_user, send("sleep", {}))
    async with make_world(bot=Assistant(), model_provider=model, bot_debounce=0.0) as w:
        session_id = await _delegate(w, "reconcile the invoices")
        await _status(w, session_id, "paused")
        [told] = await replies(w, 1)
        assert without_why(told) == "Your invoice task is paused: its check failed."
        matter = await _matter(w, session_id)
        async with w.app.services.db.read() as s:
            reports = list(
                await s.scalars(select(InboxItem).where(InboxItem.kind == "task_update"))
            )
    assert matter is not None and matter.last_error is not None
    assert matter.last_error.startswith("the reviewer gave no verdict twice")
    assert matter.revision == 0 and matter.work_record == []  # the settle did not take effect
    assert model.calls["review"] == 2 and model.calls["agent"] == 2
    assert "must call the verdict tool" in (asked[1][-1].content or "")
    [report] = reports
    assert report.payload["update"] == "blocker"
    assert "paused: the reviewer gave no verdict twice" in report.payload["text"]
    assert "paused: the reviewer gave no verdict twice" in bot_saw[0]


async def test_a_verdict_on_the_second_ask_lets_the_settle_apply(
    make_world: WorldFactory,
) -> None:
    model = RoutedModel()
    model.add("agent", send("events_read", {}), _settle(0, "complete", summary="all done"))
    model.add("review", text("Verdict: approve"), APPROVE)
    model.add("bot", send("sleep", {}))  # the result goes to the Bot's inbox
    async with make_world(bot=Assistant(), model_provider=model, bot_debounce=0.0) as w:
        session_id = await _delegate(w, "reconcile the invoices")
        await _status(w, session_id, "completed")
        matter = await _matter(w, session_id)
    assert matter is not None and matter.last_error is None and matter.revision == 1
    assert [r["summary"] for r in matter.work_record] == ["all done"]
    assert model.calls["review"] == 2


async def test_a_continue_settle_is_not_reviewed_but_a_wait_is(make_world: WorldFactory) -> None:
    model = RoutedModel()
    model.add("agent", send("events_read", {}), _settle(0, "continue", summary="step one"))
    async with make_world(bot=Assistant(), model_provider=model, bot_debounce=0.0) as w:
        session_id = await _delegate(w, "a long job")
        await wait_until(
            lambda: _revision_is(w, session_id, 1), timeout=30, what="the continue settle"
        )
        # The next turn's agent waits for its script, so nothing else can call a reviewer.
        assert model.calls["review"] == 0
        model.add("agent", _wait_later(1))
        model.add("review", APPROVE)
        await _status(w, session_id, "waiting")
        matter = await _matter(w, session_id)
    assert model.calls["review"] == 1
    assert matter is not None
    assert [r["disposition"] for r in matter.work_record] == ["continue", "wait"]


async def test_the_agent_may_be_rejected_any_number_of_times_and_goes_on_with_the_feedback(
    make_world: WorldFactory,
) -> None:
    model = RoutedModel()
    seen: list[list[Message]] = []
    model.add(
        "agent",
        send("events_read", {}),
        _wait_later(0),
        _noting(seen, _wait_later(0, "the release build")),
        _noting(seen, _wait_later(0, "the release build at 18:00")),
    )
    model.add("review", reject("which build?"), reject("say when it is due"), APPROVE)
    async with make_world(bot=Assistant(), model_provider=model, bot_debounce=0.0) as w:
        session_id = await _delegate(w, "tell me when the build is green")
        await _status(w, session_id, "waiting")
        matter = await _matter(w, session_id)
    feedback = [m[-1].content or "" for m in seen]
    assert "rejected by the reviewer: which build?" in feedback[0]
    assert "rejected by the reviewer: say when it is due" in feedback[1]
    assert model.calls["review"] == 3
    assert matter is not None and matter.last_error is None and matter.revision == 1
    assert matter.waiting_for == "the release build at 18:00"
    assert matter.rejection_count == 2  # counted, each without a new revision


async def test_a_matter_whose_turn_always_raises_is_paused_once_not_run_again(
    make_world: WorldFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, the failed turn released the Matter still active, and the pool claimed it again
    at once: a model-calling loop. Now it is paused with its error and reported, once."""
    runs: list[int] = []

    async def failing_run(self: MatterTurn, matter: Matter) -> None:
        runs.append(matter.id)
        raise OverflowError("int too big to convert")

    monkeypatch.setattr(MatterTurn, "run", failing_run)
    model = RoutedModel()
    model.add("bot", send("send_user", {"text": "A task is paused."}), send("sleep", {}))
    async with make_world(bot=Assistant(), model_provider=model, bot_debounce=0.0) as w:
        session_id = await _delegate(w, "reconcile the invoices")
        await _status(w, session_id, "paused")
        await replies(w, 1)  # the report reached the owner, and the world is quiet
        matter = await _matter(w, session_id)
        await w.app.services.notifier.notify(MATTERS_TOPIC)  # a wake-up claims nothing more
        await quiet(w)
    assert matter is not None
    assert matter.last_error == "the turn failed: OverflowError: int too big to convert"
    assert runs == [matter.id]
