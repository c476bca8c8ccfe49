"""Driving the real Bot through the Feishu fake with a scripted model."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import func, select

from bot.assistant.component import Assistant
from bot.assistant.worker import BotWorker
from bot.llm.scripted import ScriptedProvider
from bot.llm.types import Message
from storage.models import InboxItem, OutboxMessage
from storage.repos.outbox import PENDING
from tests.fakes import FakeCard, Mention, SentMessage
from tests.feishu_world import OWNER, FeishuWorld, WorldFactory
from tests.waiting import wait_until

send = ScriptedProvider.tool_call
sleep = ScriptedProvider.tool_call("sleep", {})


@asynccontextmanager
async def bot_world(
    make_world: WorldFactory, provider: ScriptedProvider | None, **overrides: Any
) -> AsyncIterator[FeishuWorld]:
    overrides.setdefault("bot_debounce", 0.0)
    async with make_world(bot=Assistant(), model_provider=provider, **overrides) as world:
        yield world


async def say(w: FeishuWorld, text: str, *, sender: str = OWNER, **kwargs: Any) -> dict[str, Any]:
    chat = kwargs.pop("chat_id", "oc_owner_dm" if sender == OWNER else "oc_dm")
    event = w.message(text, chat_id=chat, sender_open_id=sender, **kwargs)
    status, body = await w.events.post(event)
    assert status == 200, body
    return event


async def say_in_group(w: FeishuWorld, text: str, *, sender: str = "ou_member") -> None:
    await say(
        w,
        f"@_user_1 {text}",
        sender=sender,
        chat_id="oc_group",
        chat_type="group",
        mentions=[Mention(open_id="ou_bot", name="Maka")],
    )


async def replies(w: FeishuWorld, n: int, *, mid_turn: bool = False) -> list[str]:
    """The answers sent (a turn's progress card is not one: see `progress_card`)."""

    async def enough() -> bool:
        return len(answers_sent(w)) >= n

    await wait_until(enough, what=f"{n} replies at the Feishu fake")
    await quiet(w, mid_turn=mid_turn)  # a wrong extra reply would have been sent by now
    return [m.text or m.content for m in answers_sent(w)]


def answers_sent(w: FeishuWorld) -> list[SentMessage]:
    return [m for m in w.fake.sent if w.fake.card_of_message(m.content) is None]


def cards(w: FeishuWorld) -> list[FakeCard]:
    """The progress cards sent, each as it looks now."""
    shown = (w.fake.card_of_message(m.content) for m in w.fake.sent)
    return [card for card in shown if card is not None]


async def quiet(w: FeishuWorld, timeout: float = 20.0, *, mid_turn: bool = False) -> None:
    """Nothing more is on its way: no Bot turn running, every conversation inbox item
    handled and every outbox row settled (sent, failed or uncertain). A reply the input
    could still cause has then reached the fake, so "nothing else was sent" can be asserted
    without a fixed sleep. (A turn keeps its batch undelivered until it ends and writes its
    replies before that, so checking the inbox before the outbox misses none.)

    `mid_turn`: the test holds a turn part-way (its model step never returns), so only the
    outbox is checked: what the turn has written so far has gone out."""
    state = w.app.services.host.status().get("bot")  # absent with the channel tests' stand-in
    bot = state.worker if state is not None else None
    busy: set[int] = bot._busy if isinstance(bot, BotWorker) else set()
    seen = ""

    async def settled() -> bool:
        nonlocal seen
        turns = sorted(busy)
        async with w.app.services.db.read() as s:
            undelivered = await s.scalar(
                select(func.count(InboxItem.id)).where(
                    InboxItem.delivered_at.is_(None), InboxItem.conversation_id.is_not(None)
                )
            )
            pending = await s.scalar(
                select(func.count(OutboxMessage.id)).where(OutboxMessage.state == PENDING)
            )
        seen = (
            f"turns running in conversations {turns}, {undelivered} inbox items undelivered, "
            f"{pending} outbox rows pending"
        )
        return pending == 0 if mid_turn else not turns and undelivered == 0 and pending == 0

    try:
        await wait_until(settled, timeout, what="the world to go quiet")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last seen: {seen}") from None


async def all_delivered(w: FeishuWorld) -> None:
    """Every conversation inbox item has been handled by the Bot (task Sessions' own inbox
    items are not the Bot's)."""

    async def done() -> bool:
        async with w.app.services.db.read() as s:
            waiting = await s.scalar(
                select(func.count(InboxItem.id)).where(
                    InboxItem.delivered_at.is_(None), InboxItem.conversation_id.is_not(None)
                )
            )
        return waiting == 0

    await wait_until(done)


def last_user_text(messages: list[Message]) -> str:
    return next(m.content or "" for m in reversed(messages) if m.role == "user")


WHY = re.compile(r"\n\(why: /why \d+\)$")


def without_why(text: str) -> str:
    """A message the assistant sent on its own, without its "(why: /why N)" footer (which
    must be there)."""
    assert WHY.search(text), f"no /why footer in {text!r}"
    return WHY.sub("", text)
