"""The status page's attachments: how many are in each state, and the parked ones (failed
every try, set aside) with their error. By row and message id only: a file's name is the
sender's words."""

from __future__ import annotations

from datetime import datetime, tzinfo

from bot.host.backoff import one_line
from bot.services import Services
from bot.web.status.items import Item
from storage.repos import attachments

PARKED_SHOWN = 10
ERROR_SHOWN = 300
PARKED_HINT = (
    "it could not be downloaded or read after every try (Feishu away, a worker failing); "
    "its chat was told it could not be read; the log has each failure"
)


def _when(at: datetime | None, tz: tzinfo) -> str:
    return at.astimezone(tz).strftime("%Y-%m-%d %H:%M") if at else "never"


async def attachment_items(services: Services, tz: tzinfo) -> list[Item]:
    async with services.db.read() as tx:
        counts = await attachments.counts_by_state(tx)
        parked = await attachments.parked(tx, PARKED_SHOWN)
    if not counts:
        return []
    order = (attachments.FETCH, attachments.EXTRACT, attachments.DONE, attachments.FAILED)
    summary = ", ".join(f"{counts.get(s, 0)} {s}" for s in order)
    items: list[Item] = [Item(name="attachments", state=summary)]
    items += [
        Item(
            name=f"attachment {row.id} ({row.platform} message {row.message_id})",
            state=f"{row.kind}, {row.attempts} tries, parked {_when(row.updated_at, tz)}",
            detail=one_line(row.error or "", ERROR_SHOWN),
            red=True,
            hint=PARKED_HINT,
        )
        for row in parked
    ]
    return items
