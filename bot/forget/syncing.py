"""What a forget does to syncing, as `/forget` and `maka forget` say it: a whole source or
chat stops syncing when the forget is confirmed (storage/repos/source_stops.py) until the
owner turns it back on with `/sync resume`; a person or a date range is forgotten as it is
stored now, and syncing goes on."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from sources.feishu.records import KIND as BOT_CHATS
from storage.repos import forgets, source_stops

GOES_ON = (
    "Syncing goes on: a person or date range is forgotten as stored now, and what comes "
    "later is kept (forget a whole source or chat to stop its syncing)."
)


def resume_name(sel: forgets.Selector, names: list[str]) -> str:
    """What `/sync resume` takes to turn these back on."""
    if len(names) == 1:
        return names[0]
    return sel.chat or sel.source or names[0]


def _bot_is_in(names: list[str]) -> bool:
    """The bot's own chats are synced as `feishu:<chat>`: it is in them, and live messages
    there still reach it."""
    return any(n.startswith(f"{BOT_CHATS}:") for n in names)


async def plan_line(tx: AsyncSession, sel: forgets.Selector) -> str:
    """One line for the plan: what the forget will do to syncing ("" when nothing syncs it)."""
    if not source_stops.whole(sel):
        return GOES_ON
    names = await source_stops.would_stop(tx, sel)
    if not names:
        return ""
    line = (
        f"It also stops syncing {', '.join(names)} until you send "
        f"/sync resume {resume_name(sel, names)}."
    )
    if _bot_is_in(names):
        line += (
            " I am in that chat: what is sent there from now on still reaches me, is kept and"
            " answered (remove me from the chat to stop that)."
        )
    return line


async def stop(
    tx: AsyncSession, sel: forgets.Selector, request_id: int, now: datetime
) -> list[str]:
    """In the transaction that stores request #request_id: stop what it names as a whole."""
    return await source_stops.stop(tx, sel, by=f"forget #{request_id}", now=now)


def stopped_line(sel: forgets.Selector, names: list[str]) -> str:
    """One line for the confirmation: what stopped syncing ("" when nothing)."""
    if not names:
        return ""
    return (
        f"Stopped syncing {', '.join(names)}; /sync resume {resume_name(sel, names)} turns it "
        "back on, and then only what I have not had comes (what you forgot stays forgotten)."
    )
