"""Action tools in a task agent's hands, through the real Matter worker, the Bot's approval
cards and the Feishu fake: the action is proposed as the person who asked for the task, waits
for the owner's Approve like the Bot's own, and is proposed once when a paused turn is resumed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

from sqlalchemy import select

from bot.assistant.component import Assistant
from bot.llm.types import Message, ModelUnavailable
from bot.matters.service import MatterService
from storage.models import Conversation, InboxItem, Matter
from storage.repos import actions as repo
from storage.types import utcnow
from tests.actions.support import (
    GROUP,
    actions,
    approval_cards,
    click,
    settled,
    texts_in,
    the_approval_card,
)
from tests.assistant.support import quiet, say
from tests.feishu_world import OWNER, FeishuWorld, WorldFactory
from tests.matters.routed_model import APPROVE, RoutedModel, send
from tests.owner.support import PUBLIC_URL, SECRET_KEY, sign_in
from tests.seed import task_session
from tests.waiting import wait_until

USER, MEMBER = "ou_user", "ou_member"
READ = send("events_read", {})  # the request: a Matter that left it unread would run again
SYNC = {
    "title": "Sync with Li",
    "start": "2030-01-07T10:00:00",
    "end": "2030-01-07T10:30:00",
    "attendees": "ou_li_wei",
    "reason": "the task is to set up a sync with Li",
}


@asynccontextmanager
async def task_world(make_world: WorldFactory, model: RoutedModel) -> AsyncIterator[FeishuWorld]:
    async with make_world(
        bot=Assistant(),
        model_provider=model,
        bot_debounce=0.0,
        public_url=PUBLIC_URL,
        secret_key=SECRET_KEY,
    ) as w:
        assert (await sign_in(w)).status == 200
        yield w


async def delegate(w: FeishuWorld, request: str, *, by: str, chat_id: str, group: bool) -> int:
    """A task Session asked for by `by` in `chat_id`, its request waiting (as tasks_create
    leaves it): the Matter worker adopts and runs it. The Session's id."""
    async with w.app.services.db.write() as s:
        conv = await s.scalar(select(Conversation).where(Conversation.chat_id == chat_id))
        if conv is None:
            conv = Conversation(
                platform="feishu",
                chat_id=chat_id,
                chat_type="group" if group else "p2p",
                name="team" if group else None,
                peer_open_id=None if group else by,
                listen_all=False,
                created_at=utcnow(),
            )
            s.add(conv)
            await s.flush()
        task = await task_session(s, conv, "task")
        s.add(
            InboxItem(
                session_id=task.id,
                kind="delegation",
                created_at=utcnow(),
                payload={"request": request, "from": by, "conversation_id": conv.id},
                dedupe_key=f"test:{task.id}",
            )
        )
        return task.id


async def matter_of(w: FeishuWorld, session_id: int, status: str) -> Matter:
    found: list[Matter] = []

    async def reached() -> bool:
        async with w.app.services.db.read() as s:
            m = await s.scalar(
                select(Matter)
                .where(Matter.session_id == session_id)
                .execution_options(populate_existing=True)
            )
        found[:] = [m] if m is not None and m.status == status else []
        return bool(found)

    await wait_until(reached, what=f"the task's Matter to be {status}")
    return found[0]


def wait_an_hour(revision: int) -> Any:
    def step(_messages: list[Message]) -> Any:
        wake = (utcnow() + timedelta(hours=1)).isoformat()
        return send(
            "settle",
            {
                "expected_revision": revision,
                "disposition": "wait",
                "reason": "proposed; the owner decides",
                "summary": "proposed the action",
                "wakes": [wake],
                "waiting_for": "the owner's approval",
            },
        )

    return step


def tool_result(seen: list[str], name: str) -> Any:
    """A step recording what the agent was shown for its last call (`name`), then waiting."""

    def step(messages: list[Message]) -> Any:
        [last] = [m for m in messages[-1:] if m.role == "tool" and m.name == name]
        seen.append(last.content or "")
        return wait_an_hour(0)(messages)

    return step


async def test_a_task_agents_event_waits_for_the_owner_and_is_proposed_as_who_asked(
    make_world: WorldFactory,
) -> None:
    model = RoutedModel()
    model.add("agent", READ, send("create_event", SYNC), wait_an_hour(0))
    model.add("review", APPROVE)
    async with task_world(make_world, model) as w:
        session_id = await delegate(
            w, "set up a sync with Li", by=USER, chat_id="oc_dm", group=False
        )
        card = await the_approval_card(w)
        matter = await matter_of(w, session_id, "waiting")
        assert "Create the event 'Sync with Li' 2030-01-07 10:00–10:30" in card.content
        assert USER in card.content  # the card says who asked
        await quiet(w)
        assert w.fake.live_events(OWNER) == [] and not w.fake.event_keys  # nothing yet

        await click(w, card, "Approve")
        row = await settled(w, 1, repo.DONE)
        [created] = w.fake.live_events(OWNER)
        assert created.summary == "Sync with Li" and created.attendees == ["ou_li_wei"]
        assert row.requester == USER  # the Matter's requester, not the owner who approved
        assert row.conversation_id == matter.conversation_id
        assert row.request_key == f"matter:{matter.id}:rev:0:create_event:1"


async def test_a_group_members_task_sends_nothing_even_where_the_owner_allows_their_own(
    make_world: WorldFactory,
) -> None:
    model = RoutedModel()
    note = {"to": GROUP, "text": "the report is late", "reason": "the task says to tell them"}
    model.add("agent", READ, send("send_message", note), wait_an_hour(0))
    model.add("review", APPROVE)
    async with task_world(make_world, model) as w:
        await say(w, "/allow send_message")  # everywhere: the owner's own requests only
        await quiet(w)
        session_id = await delegate(w, "tell the team", by=MEMBER, chat_id=GROUP, group=True)
        card = await the_approval_card(w)
        await matter_of(w, session_id, "waiting")
        assert MEMBER in card.content
        await click(w, card, "Approve", by=MEMBER)  # a forged click on the owner's card
        await quiet(w)
        [row] = await actions(w)
        assert (row.state, row.decided_by, row.requester) == (repo.PROPOSED, None, MEMBER)
        assert "the report is late" not in texts_in(w, GROUP)


async def test_a_paused_turn_resumed_proposes_its_action_once(make_world: WorldFactory) -> None:
    model = RoutedModel()

    def model_fails(_messages: list[Message]) -> Any:
        raise ModelUnavailable("the provider went away")  # the turn stops after proposing

    seen: list[str] = []
    model.add("agent", READ, send("create_event", SYNC), model_fails)
    model.add("bot", send("sleep", {}))  # told the task paused, the Bot says nothing
    async with task_world(make_world, model) as w:
        session_id = await delegate(
            w, "set up a sync with Li", by=USER, chat_id="oc_dm", group=False
        )
        await the_approval_card(w)
        matter = await matter_of(w, session_id, "paused")
        model.add("agent", READ, send("create_event", SYNC), tool_result(seen, "create_event"))
        model.add("review", APPROVE)
        assert await MatterService(w.app.services.db, w.app.services.notifier).resume(matter.id)
        again = await matter_of(w, session_id, "waiting")
        await quiet(w)
        assert again.run_count == 2 and again.revision == 1
        [row] = await actions(w)  # one row, one card: the same step, the same key
        assert row.request_key == f"matter:{matter.id}:rev:0:create_event:1"
        assert len(approval_cards(w)) == 1
        assert "action #1 was proposed before and is proposed" in seen[0], seen
