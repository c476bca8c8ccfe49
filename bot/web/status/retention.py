"""The status page's retention: the last prune (when, rows removed per table, its error) and
the table sizes that prune measured. One stored row is read: counting tables here would make
every page view as slow as the biggest table (bot/host/retention.py stores them)."""

from __future__ import annotations

from datetime import tzinfo

from bot.host.backoff import one_line
from bot.host.retention import RetentionPolicy
from bot.services import Services
from bot.web.status.items import Item
from storage.repos import retention
from storage.types import utcnow

ERROR_SHOWN = 300
LATE_PASSES = 3  # intervals without a pass before it shows red
LATE_HINT = (
    "no pass has run for a while: is a worker running (`maka serve` with role worker or all)? "
    "its log says why a pass failed; `maka prune` runs one now"
)
ERROR_HINT = (
    "a table was not pruned (the error says why); the next pass tries again, or run "
    "`maka prune` to see it now; nothing waiting is ever pruned"
)


async def retention_items(services: Services, tz: tzinfo) -> list[Item]:
    async with services.db.read() as tx:
        last = await retention.last(tx)
    if last is None:
        return [Item(name="last prune", state="never", detail="the first runs within the hour")]
    policy = RetentionPolicy.from_settings(services.settings)
    late = utcnow() - last.finished_at > policy.interval * LATE_PASSES
    when = last.started_at.astimezone(tz).strftime("%Y-%m-%d %H:%M")
    removed = sum(last.deleted.values())
    per_table = ", ".join(f"{name} {n}" for name, n in last.deleted.items() if n)
    items = [
        Item(
            name="last prune",
            state=f"{when}, {removed} rows removed",
            detail=(per_table or "nothing was old enough")
            + (f"; error: {one_line(last.error, ERROR_SHOWN)}" if last.error else ""),
            red=last.error is not None or late,
            hint=ERROR_HINT if last.error is not None else LATE_HINT,
        )
    ]
    days = policy.days
    for name, rows in last.sizes.items():
        kept = days.get(name)
        items.append(
            Item(
                name=f"table {name}",
                state=f"{rows} rows",
                detail="kept until forgotten"
                if kept is None
                else (f"keeps {kept} days" if kept > 0 else "kept forever (setting 0)"),
            )
        )
    return items
