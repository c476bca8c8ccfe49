"""The Bot's calendar tools: each proposes its action (bot/actions/calendar.py) through the
one door, `propose`, and says what happens now (running, waiting for the owner, refused)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select

from bot.actions.calendar import CANCEL, CREATE, MOVE, register_calendar_kinds
from bot.actions.context import ActionContext, ActionTools
from bot.actions.tools import proposed
from bot.agent.tools import ToolError
from sources.feishu.owner_units import CALENDAR_SCOPE as SCOPE
from sources.feishu.owner_units import CALENDAR_UNIT as UNIT
from storage.models import SourceRecord
from storage.repos.source_records import is_tombstone


def _at(ctx: ActionContext, name: str, value: str) -> str:
    """An ISO time with its zone (without one: the assistant's time zone)."""
    try:
        at = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ToolError(f"{name}: {value!r} is not an ISO date and time") from None
    if at.tzinfo is None:
        at = at.replace(tzinfo=ctx.services.settings.tz)
    return at.isoformat()


async def _event(ctx: ActionContext, event: str) -> dict[str, object]:
    """The event's id, and its title from the synced calendar for the card's plain words,
    only when the asker may see the owner's calendar (the answer repeats the summary: a
    group member must not learn a title from it)."""
    params: dict[str, object] = {"event": event.strip()}
    if not (await ctx.asker()).visibility.sees_scope(SCOPE):
        return params
    async with ctx.services.db.read() as tx:
        rows = await tx.scalars(
            select(SourceRecord)
            .where(SourceRecord.source == UNIT, SourceRecord.thread_key == event.strip())
            .order_by(SourceRecord.id.desc())
            .limit(5)
        )
        current = next((r for r in rows.all() if not is_tombstone(r.payload)), None)
    if current is not None and current.title:
        params["event_title"] = current.title
    return params


def _people(attendees: str) -> list[str]:
    return [a.strip() for a in attendees.replace(";", ",").split(",") if a.strip()]


async def create_event(
    ctx: ActionContext, title: str, start: str, end: str, attendees: str, reason: str
) -> str:
    """Create an event on the owner's Feishu calendar: `start` and `end` ISO date and time
    (without a zone: the assistant's time zone); `attendees` the people's open_ids (ou_…),
    comma separated, or empty. It waits for the owner's approval unless the owner allowed
    it; the result says which."""
    params: dict[str, Any] = {
        "title": title.strip(),
        "start": _at(ctx, "start", start),
        "end": _at(ctx, "end", end),
        "attendees": _people(attendees),
    }
    return await proposed(ctx, CREATE, params, reason)


async def move_event(ctx: ActionContext, event: str, start: str, end: str, reason: str) -> str:
    """Move an event of the owner's Feishu calendar (`event`: its event id) to new times, as
    for create_event. Waits for the owner's approval unless allowed."""
    params = await _event(ctx, event)
    params |= {"start": _at(ctx, "start", start), "end": _at(ctx, "end", end)}
    return await proposed(ctx, MOVE, params, reason)


async def cancel_event(ctx: ActionContext, event: str, reason: str) -> str:
    """Cancel (delete) an event of the owner's Feishu calendar (`event`: its event id).
    Waits for the owner's approval unless allowed."""
    return await proposed(ctx, CANCEL, await _event(ctx, event), reason)


def install_calendar_tools(tools: ActionTools[Any]) -> None:
    register_calendar_kinds()
    for tool in (create_event, move_event, cancel_event):
        tools.tool(tool)
