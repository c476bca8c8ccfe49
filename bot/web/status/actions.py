"""The status page's outward actions (bot/actions/): counts by state, then the latest, each
with who asked, who approved or rejected it (a person, or the standing `/allow` that did) and
when; a failed one is red with its error. By kind and id only: an action's summary holds the
requester's words (`/actions show N` in the owner's DM shows them)."""

from __future__ import annotations

from datetime import datetime, tzinfo

from bot.host.backoff import one_line
from bot.services import Services
from bot.web.status.items import Item
from storage.repos import actions

SHOWN = 10
ERROR_SHOWN = 300
FAILED_HINT = (
    "it failed for good or after every try; nothing is retried now. See /actions show N in "
    "the owner's DM; ask again once the cause is fixed (a sign-in, the platform)"
)


def _when(at: datetime | None, tz: tzinfo) -> str:
    return at.astimezone(tz).strftime("%Y-%m-%d %H:%M") if at else "never"


async def action_items(services: Services, tz: tzinfo) -> list[Item]:
    async with services.db.read() as tx:
        counts = await actions.count_by_state(tx)
        recent = await actions.recent(tx, None, SHOWN)
    if not counts:
        return []
    summary = ", ".join(f"{counts.get(s, 0)} {s}" for s in actions.STATES if counts.get(s))
    items = [Item(name="actions", state=summary)]
    for row in recent:
        decided = (
            f"; {'rejected' if row.state == actions.REJECTED else 'approved'} by "
            f"{row.decided_by} {_when(row.decided_at, tz)}"
            if row.decided_by
            else ""
        )
        failed = row.state == actions.FAILED
        items.append(
            Item(
                name=f"action #{row.id} ({row.kind})",
                state=f"{row.state}; asked by {row.requester} {_when(row.created_at, tz)}{decided}",
                detail=one_line(row.last_error or "", ERROR_SHOWN) if failed else "",
                red=failed,
                hint=FAILED_HINT if failed else "",
            )
        )
    return items
