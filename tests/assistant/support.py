"""Driving the real Bot through the Feishu fake with a scripted model."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import func, select

from bot.assistant.component import Assistant
from bot.llm.scripted import ScriptedProvider
from bot.llm.types import Message
from storage.models import InboxItem
from tests.fakes import Mention
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


async def replies(w: FeishuWorld, n: int) -> list[str]:
    async def enough() -> bool:
        return len(w.fake.sent) >= n

    await wait_until(enough)
    await asyncio.sleep(0.3)  # a wrong extra reply gets the chance to show
    return [m.text or m.content for m in w.fake.sent]


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
