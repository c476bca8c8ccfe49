"""The message tools, and `proposed`, which every action tool ends in: each proposes its
action (bot/actions/registry.py `propose`) and returns the one line saying what happens now
(running, waiting for the owner, refused). The Bot and task agents alike have them
(bot/actions/toolsets.py); the requester is the asker its `ActionContext` gives
(bot/actions/context.py), never a name the model writes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bot.actions.context import ActionContext, ActionTools
from bot.actions.messages import (
    SCHEDULE,
    SEND,
    UnknownTarget,
    message_params,
    register_message_kinds,
    resolve_target,
)
from bot.actions.registry import propose
from bot.agent.tools import ToolError


async def proposed(ctx: ActionContext, kind: str, params: dict[str, object], reason: str) -> str:
    asker = await ctx.asker()
    proposed = await propose(
        ctx.services,
        kind=kind,
        params=params,
        requester=asker.open_id,
        conversation=ctx.conversation,
        reason=reason,
        request_key=ctx.request_key(kind),  # the same call of a turn run again
    )
    return proposed.line


async def _target(ctx: ActionContext, to: str) -> tuple[str, str]:
    visibility = (await ctx.asker()).visibility
    # 0: no conversation has it (an asker who sees nothing learns no name either)
    within = 0 if visibility.sees_nothing else visibility.only_conversation
    async with ctx.services.db.read() as tx:
        try:
            return await resolve_target(tx, ctx.conversation.platform, to, within)
        except UnknownTarget as exc:
            raise ToolError(str(exc)) from None


async def send_message(ctx: ActionContext, to: str, text: str, reason: str) -> str:
    """Send a message as the bot to another chat or person: `to` is a chat's name or id
    (oc_…) or a person's open_id (ou_…). Not for answering whoever asked (send_user does
    that; a task agent tells the assistant with message_bot). It waits for the owner's
    approval unless the owner allowed it; the result says which."""
    chat_id, name = await _target(ctx, to)
    params = message_params(ctx.conversation.platform, chat_id, name, text)
    return await proposed(ctx, SEND, params, reason)


async def schedule_message(ctx: ActionContext, to: str, text: str, at: str, reason: str) -> str:
    """Send a message as the bot at a later time: `to` as for send_message; `at` an ISO date
    and time (without a zone: the assistant's time zone). The owner approves it now; it is
    sent at that time."""
    try:
        when = datetime.fromisoformat(at.strip())
    except ValueError:
        raise ToolError(f"at: {at!r} is not an ISO date and time") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=ctx.services.settings.tz)
    chat_id, name = await _target(ctx, to)
    params = message_params(ctx.conversation.platform, chat_id, name, text, when)
    return await proposed(ctx, SCHEDULE, params, reason)


def install_message_tools(tools: ActionTools[Any]) -> None:
    register_message_kinds()
    for tool in (send_message, schedule_message):
        tools.tool(tool)
