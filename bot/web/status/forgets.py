"""The status page's forgets: the latest requests, how far each got, and a parked one (failed
every try) in red with its error. By id and counts only: what was forgotten is not repeated
here."""

from __future__ import annotations

from datetime import tzinfo

from bot.forget.batch import summary
from bot.host.backoff import one_line
from bot.services import Services
from bot.web.status.items import Item
from storage.repos import forgets

SHOWN = 5
ERROR_SHOWN = 300
PARKED_HINT = (
    "a batch failed every try and was rolled back; what is left stays until it runs again: "
    "send the same /forget … confirm (it resumes from the start, skipping what is gone)"
)


async def forget_items(services: Services, tz: tzinfo) -> list[Item]:
    async with services.db.read() as tx:
        rows = await forgets.recent(tx, SHOWN)
    return [
        Item(
            name=f"forget #{row.id}",
            state=f"{row.status} {row.updated_at.astimezone(tz):%Y-%m-%d %H:%M}: "
            f"{summary(row.removed)}",
            detail=one_line(row.error or "", ERROR_SHOWN),
            red=row.status == forgets.PARKED,
            hint=PARKED_HINT if row.status == forgets.PARKED else "",
        )
        for row in rows
    ]
