"""Durable work: waits survive restarts, settles follow the rules, review can say no."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from sqlalchemy import func, select

from bot.assistant.component import Assistant
from bot.llm.types import Message
from bot.matters.rules import Disposition, SettleRequest
from bot.matters.service import MatterService
from storage.models import InboxItem, Matter, Timer
from storage.types import utcnow
from tests.assistant.support import replies, say, say_in_group
from tests.feishu_world import OWNER, FeishuWorld, WorldFactory
from tests.matters.routed_model import APPROVE, RoutedModel, send, text
from tests.seed import owner_dm, task_session
from tests.waiting import wait_until


async def _delegate(w: FeishuWorld, request: str, name: str = "task") -> int:
    """A task Session with a delegated request in its inbox (as tasks_create leaves it)."""
    now = utcnow()
    async with w.app.services.db.write() as s:
        conv = await owner_dm(s)
        session = await task_session(s, conv, name)
        s.add(
            InboxItem(
                session_id=session.id,
                kind="delegation",
                created_at=now,
                payload={"request": request, "from": OWNER, "conversation_id": conv.id},
                dedupe_key=f"test:{session.id}",
            )
        )
        return session.id


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
    make_world: WorldFactory,
) -> None:
    model = RoutedModel()
    wake_at = utcnow() + timedelta(seconds=2)
    model.add(
        "agent",
        send("events_read", {}),
        _settle(0, "wait", wakes=[wake_at.isoformat()], waiting_for="the report at 2s"),
    )
    model.add("review", APPROVE)
    async with make_world(bot=Assistant(), model_provider=model, bot_debounce=0.0) as w:
        session_id = await _delegate(w, "check the nightly report when it is ready")
        await _status(w, session_id, "waiting")
    # the process is down when the wake falls due
    await asyncio.sleep(max(0.0, (wake_at - utcnow()).total_seconds()) + 0.5)
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
        assert await replies(w2, 1) == ["Your nightly report is fine."]
        await asyncio.sleep(0.5)
        assert len(w2.fake.sent) == 1
        async with w2.app.services.db.read() as s:
            timer = await s.scalar(select(Timer).where(Timer.kind == "matter_wake"))
            matter = await s.scalar(select(Matter).where(Matter.session_id == session_id))
    assert timer is not None and timer.state == "fired"
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
    model.add("review", text("REJECT: you did not verify the numbers"), APPROVE)
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
    model.add("review", APPROVE)
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
                    amendments=[],
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
        answers = [m.text for m in w.fake.sent if m.chat_id == "oc_owner_dm"]
        [refusal] = [m.text for m in w.fake.sent if m.chat_id == "oc_group"]
        after = await _matter(w, session_id)
    assert f"#{matter.id} active: watch the deploy" in answers[0]
    assert answers[1] == f"Task #{matter.id}: paused."
    assert "— paused" in answers[2]
    assert answers[3] == f"Task #{matter.id}: resumed."
    assert answers[4].startswith("Usage: /matters")
    assert refusal is not None and refusal.startswith("not permitted")
    assert after is not None and after.status == "active"
