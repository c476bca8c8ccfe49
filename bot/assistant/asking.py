"""Who is asking in a Bot turn, and what they may see: the latest message's sender; with no
message in the turn (only notices), the conversation's own participant, never the owner
unless this is the owner's DM."""

from __future__ import annotations

from dataclasses import dataclass

from bot.assistant.access import Role, role_of
from bot.assistant.turn_context import BatchItem, TurnContext
from bot.assistant.visibility import Visibility, participant, visibility_of


@dataclass(frozen=True)
class Asker:
    open_id: str
    role: Role
    visibility: Visibility


def latest_message(ctx: TurnContext) -> BatchItem | None:
    return next((item for item in reversed(ctx.batch) if item.is_message), None)


async def asker_of(ctx: TurnContext) -> Asker:
    latest = latest_message(ctx)
    services, conv = ctx.services, ctx.conversation
    async with services.db.read() as tx:
        if latest is not None:
            open_id = str(latest.payload.get("sender_id"))
            role = latest.role or await role_of(tx, services.settings, conv.platform, open_id)
        else:
            open_id = participant(conv) or ""
            role = (
                await role_of(tx, services.settings, conv.platform, open_id)
                if open_id
                else Role.USER
            )
        visibility = await visibility_of(tx, services.settings, conv, open_id or None)
    return Asker(open_id, role, visibility)
