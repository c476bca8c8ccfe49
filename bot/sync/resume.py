"""`/sync resume NAME`: the owner, in their DM, turns back on a source or chat a forget
stopped (storage/repos/source_stops.py). It syncs from where it stopped: only what the
assistant has not had comes, and what was forgotten stays forgotten (its tombstones keep it
out)."""

from __future__ import annotations

from bot.assistant.access import NOT_PERMITTED, Role, log_refusal
from bot.assistant.commands import CommandContext, UsageError
from bot.sync.component import SYNC_TOPIC
from storage.repos import source_stops
from storage.types import utcnow

ONLY_OWNER_DM = f"{NOT_PERMITTED}: only the owner turns a forgotten source back on, in their DM"


async def resume_command(ctx: CommandContext, args: list[str]) -> str:
    if not ctx.visibility.everything or ctx.role is not Role.OWNER:  # as /forget: the owner
        log_refusal(ctx.sender_id, " ".join(["/sync resume", *args]), ctx.chat_id)
        return ONLY_OWNER_DM
    if len(args) != 1:
        raise UsageError("/sync resume takes one source or chat, as /sync status names it")
    services = ctx.services
    async with services.db.write() as tx:
        rows = await source_stops.stopped(tx, args[0])
        names = [r.name for r in rows]
        await source_stops.resume(tx, names, utcnow())
    if not names:
        return f"Nothing called {args[0]!r} is stopped (/sync status shows what is)."
    await services.notifier.notify(SYNC_TOPIC)
    return (
        f"{', '.join(names)} will sync again: only what I have not had comes; what you forgot "
        "stays forgotten. /sync status shows how it goes."
    )


async def stopped_answer(ctx: CommandContext, names: list[str]) -> str | None:
    """A sync asked of sources a forget stopped: why it will not run (None: none stopped)."""
    async with ctx.services.db.read() as tx:
        rows = [r for n in names for r in await source_stops.stopped(tx, n) if r.name == n]
    if not rows:
        return None
    lines = [f"{r.name} is {source_stops.stopped_line(r)}" for r in rows]
    return "; ".join(lines) + ": the owner turns it back on with /sync resume NAME."
