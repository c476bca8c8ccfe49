"""The Bot's action tools: each proposes its action (bot/actions/registry.py `propose`) and
returns the one line saying what happens now (running, waiting for the owner, refused). The
requester is the turn's asker (bot/assistant/asking.py), never a name the model writes.

Task agents do not get these tools yet: their tool context (bot/matters/tools.py) is not the
Bot's turn; a task that needs to act asks the Bot through its own message_bot."""

from __future__ import annotations

from datetime import datetime

from bot.actions.messages import (
    SCHEDULE,
    SEND,
    UnknownTarget,
    message_params,
    register_message_kinds,
    resolve_target,
)
from bot.actions.registry import propose
from bot.agent.tools import ToolError, ToolRegistry
from bot.assistant.asking import asker_of
from bot.assistant.turn_context import TurnContext


async def proposed(ctx: TurnContext, kind: str, params: dict[str, object], reason: str) -> str:
    asker = await asker_of(ctx)
    proposed = await propose(
        ctx.services,
        kind=kind,
        params=params,
        requester=asker.open_id,
        conversation=ctx.conversation,
        reason=reason,
        request_key=ctx.next_action_id(kind),  # the same call of a turn run again
    )
    return proposed.line


async def _target(ctx: TurnContext, to: str) -> tuple[str, str]:
    visibility = (await asker_of(ctx)).visibility
    # 0: no conversation has it (an asker who sees nothing learns no name either)
    within = 0 if visibility.sees_nothing else visibility.only_conversation
    async with ctx.services.db.read() as tx:
        try:
            return await resolve_target(tx, ctx.conversation.platform, to, within)
        except UnknownTarget as exc:
            raise ToolError(str(exc)) from None


async def send_message(ctx: TurnContext, to: str, text: str, reason: str) -> str:
    """Send a message as the bot to another chat or person: `to` is a chat's name or id
    (oc_…) or a person's open_id (ou_…). Not for answering here (that is send_user). It waits
    for the owner's approval unless the owner allowed it; the result says which."""
    chat_id, name = await _target(ctx, to)
    params = message_params(ctx.conversation.platform, chat_id, name, text)
    return await proposed(ctx, SEND, params, reason)


async def schedule_message(ctx: TurnContext, to: str, text: str, at: str, reason: str) -> str:
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


def install_action_tools(registry: ToolRegistry[TurnContext]) -> None:
    from bot.actions.calendar_tools import install_calendar_tools  # it imports `proposed`

    register_message_kinds()
    for tool in (send_message, schedule_message):
        registry.tool(tool)
    install_calendar_tools(registry)
