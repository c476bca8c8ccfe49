"""A Matter waiting for the owner's Feishu task to be completed or calendar event to start:
the target is checked (an unknown id, or one the asking chat may not see, is refused in one
line), the Matter wakes when the synced records show the task completed or the event
cancelled, and not before (a moved event moves its wake); `/matters show` and the agent's
`matter_read` say what it waits for and what happened. Everything goes through the Feishu
fake and the real sync."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

from sqlalchemy import select

from bot.assistant.component import Assistant
from bot.llm.types import Message
from bot.matters.waits import check_waiting
from storage.models import Conversation, InboxItem, Matter, Timer
from storage.types import utcnow
from tests.assistant.support import answers_sent, replies, say
from tests.feishu_world import OWNER, FeishuWorld, WorldFactory
from tests.matters.routed_model import APPROVE, RoutedModel, send
from tests.owner.support import PUBLIC_URL, SECRET_KEY, sign_in
from tests.seed import owner_dm, task_session
from tests.sources.test_app import synced
from tests.waiting import wait_until


@asynccontextmanager
async def signed_in_world(
    make_world: WorldFactory, model: RoutedModel
) -> AsyncIterator[FeishuWorld]:
    async with make_world(
        bot=Assistant(), model_provider=model, bot_debounce=0.0,
        public_url=PUBLIC_URL, secret_key=SECRET_KEY,
    ) as w:  # fmt: skip
        assert (await sign_in(w)).status == 200
        yield w


async def answer(w: FeishuWorld, text: str) -> str:
    before = len(answers_sent(w))
    await say(w, text)
    return (await replies(w, before + 1))[-1]


async def sync(w: FeishuWorld, kind: str, unit: str) -> None:
    started = w.fake.now()
    said = await answer(w, f"/sync {kind}")
    assert "sync requested" in said, said
    await synced(w, unit, after=started - 1)


async def delegate(w: FeishuWorld, request: str, *, group: bool = False) -> int:
    """A task Session with a delegated request in its inbox (as tasks_create leaves it)."""
    async with w.app.services.db.write() as s:
        if group:
            conv = Conversation(platform="feishu", chat_id="oc_group", chat_type="group",
                                listen_all=False, created_at=utcnow())  # fmt: skip
            s.add(conv)
            await s.flush()
        else:
            conv = await owner_dm(s)
        who = "ou_member" if group else OWNER
        task = await task_session(s, conv, "watch")
        s.add(InboxItem(session_id=task.id, kind="delegation", created_at=utcnow(),
                        payload={"request": request, "from": who, "conversation_id": conv.id},
                        dedupe_key=f"test:{task.id}"))  # fmt: skip
        return task.id


async def matter_of(w: FeishuWorld, session_id: int) -> Matter | None:
    async with w.app.services.db.read() as s:
        return await s.scalar(select(Matter).where(Matter.session_id == session_id))


async def reaches(w: FeishuWorld, session_id: int, status: str, revision: int) -> Matter:
    async def there() -> bool:
        m = await matter_of(w, session_id)
        return m is not None and m.status == status and m.revision == revision

    await wait_until(there, timeout=30, what=f"the Matter {status} at revision {revision}")
    matter = await matter_of(w, session_id)
    assert matter is not None
    return matter


READ = send("events_read", {})  # the delegated request: unread, it would wake the Matter again


def wait_for(revision: int, kind: str, ref: str, **more: Any) -> Any:
    return send("settle", {
        "expected_revision": revision, "disposition": "wait", "reason": "r", "summary": "s",
        "target_kind": kind, "target_id": ref, **more,
    })  # fmt: skip


def last_tool_result(messages: list[Message]) -> str:
    """The last tool's output, out of the data frame the agent sees it in."""
    framed = re.fullmatch(r"\s*<data [^>]*>\s*(.*?)\s*</data>\s*", messages[-1].content or "", re.S)
    assert framed is not None, messages[-1].content
    return framed.group(1)


def wait_a_day(revision: int) -> Any:
    wake = (utcnow() + timedelta(days=1)).isoformat()
    return send("settle", {"expected_revision": revision, "disposition": "wait",
                           "reason": "r", "summary": "s", "wakes": [wake]})  # fmt: skip


async def test_a_matter_waiting_for_a_task_wakes_when_the_synced_task_is_completed(
    make_world: WorldFactory,
) -> None:
    model = RoutedModel()
    async with signed_in_world(make_world, model) as w:
        task = w.fake.put_task("Send budget")
        await sync(w, "tasks", "tasks:owner")

        def unknown_refused(messages: list[Message]) -> Any:
            said = last_tool_result(messages)
            assert said.startswith("error: no task 'T-missing' here"), said
            assert "\n" not in said
            return wait_for(0, "task_completed", task.guid)

        model.add("agent", READ, wait_for(0, "task_completed", "T-missing"), unknown_refused)
        model.add("review", APPROVE)
        session_id = await delegate(w, "tell me once the budget is sent")
        waiting = await reaches(w, session_id, "waiting", 1)
        assert waiting.waits_on is not None and waiting.waits_on["item"] == task.guid
        assert waiting.next_wake_at is None  # no time wakes it: the task's completion does
        shown = await answer(w, f"/matters show {waiting.id}")
        assert "waiting for: task 'Send budget' to be completed" in shown, shown

        # The task changes but is not completed: the sync's page wakes the check, and the
        # Matter stays waiting.
        task.summary, task.updated_at = "Send budget v2", task.updated_at + 5
        await sync(w, "tasks", "tasks:owner")
        assert await check_waiting(w.app.services.db, utcnow()) == 0
        assert (await reaches(w, session_id, "waiting", 1)).waits_on == waiting.waits_on
        assert model.calls["agent"] == 3

        def woken(messages: list[Message]) -> Any:
            read = json.loads(last_tool_result(messages))
            assert read["waits_on"].startswith("task 'Send budget' to be completed; woke:")
            assert "'Send budget v2' was completed" in read["waits_on"], read
            return wait_a_day(1)

        model.add("agent", send("matter_read", {}), woken)
        model.add("review", APPROVE)
        task.completed_at = task.updated_at = int(w.fake.now() * 1000) + 10
        await sync(w, "tasks", "tasks:owner")
        done = await reaches(w, session_id, "waiting", 2)
        assert done.waits_on is None and model.calls["agent"] == 5


async def test_a_cancelled_event_wakes_the_matter_waiting_for_it_and_says_so(
    make_world: WorldFactory,
) -> None:
    model = RoutedModel()
    async with signed_in_world(make_world, model) as w:
        start = int(w.fake.now()) + 7200
        event = w.fake.put_event(OWNER, "Budget review", start, start + 3600)
        await sync(w, "calendar", "calendar:primary")
        model.add("agent", READ, wait_for(0, "event_start", event.event_id))
        model.add("review", APPROVE)
        session_id = await delegate(w, "prepare notes before the budget review starts")
        waiting = await reaches(w, session_id, "waiting", 1)
        # Time passing writes no record: the event's start is the Matter's wake.
        assert waiting.next_wake_at is not None
        assert int(waiting.next_wake_at.timestamp()) == start
        async with w.app.services.db.read() as s:
            timer = await s.scalar(select(Timer).where(Timer.kind == "matter_wake"))
        assert timer is not None and int(timer.due_at.timestamp()) == start

        # Moved an hour later: the wake moves with it (checked here as the worker would,
        # woken by the sync's page), and the Matter still waits.
        w.fake.move_event(event.event_id, start + 3600, start + 7200)
        await sync(w, "calendar", "calendar:primary")
        assert await check_waiting(w.app.services.db, utcnow()) == 0
        moved = await reaches(w, session_id, "waiting", 1)
        assert moved.next_wake_at is not None
        assert int(moved.next_wake_at.timestamp()) == start + 3600
        async with w.app.services.db.read() as s:
            timer = await s.scalar(select(Timer).where(Timer.kind == "matter_wake"))
        assert timer is not None and int(timer.due_at.timestamp()) == start + 3600

        def woken(messages: list[Message]) -> Any:
            read = json.loads(last_tool_result(messages))
            assert read["waits_on"].endswith("woke: the event 'Budget review' was cancelled")
            return wait_a_day(1)

        model.add("agent", send("matter_read", {}), woken)
        model.add("review", APPROVE)
        w.fake.delete_event(event.event_id)
        await sync(w, "calendar", "calendar:primary")
        await reaches(w, session_id, "waiting", 2)
        assert model.calls["agent"] == 4


async def test_a_group_task_cannot_wait_for_the_owners_task(make_world: WorldFactory) -> None:
    model = RoutedModel()
    async with signed_in_world(make_world, model) as w:
        task = w.fake.put_task("Send budget")
        await sync(w, "tasks", "tasks:owner")

        def refused(messages: list[Message]) -> Any:
            said = last_tool_result(messages)
            assert said.startswith(f"error: no task {task.guid!r} here"), said
            return wait_a_day(0)

        model.add("agent", READ, wait_for(0, "task_completed", task.guid), refused)
        model.add("review", APPROVE)
        session_id = await delegate(w, "tell us when the budget is sent", group=True)
        waiting = await reaches(w, session_id, "waiting", 1)
        assert waiting.waits_on is None
