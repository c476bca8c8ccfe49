"""`/index list | create NAME CRITERIA | show NAME | run NAME | pause NAME | resume NAME |
drop NAME` (owner and admins), over the indexes this chat may see."""

from __future__ import annotations

from datetime import datetime, tzinfo

from bot.assistant.commands import CommandContext, CommandRegistry, UsageError
from bot.llm.roles import ModelRole
from bot.memory.indexes.service import SUGGESTED, IndexRequestError, IndexService
from bot.services import Services
from storage.models import MemoryIndex
from storage.repos import memory_indexes as repo

USAGE = (
    "/index list | create NAME CRITERIA | show NAME | run NAME | pause NAME | resume NAME | "
    "drop NAME"
)
STATUS_HELP = {
    "pending": "not checked yet",
    "updating": "organizing new records",
    "no_changes_at_last_check": "up to date",
    "check_failed": "could not check for new records: see the error; it retries, or /index run",
    "maintenance_failed": "the indexing agent failed: see the error (is the model reachable?); "
    "it retries, or /index run",
}
# Indexes are kept by a model: without one they wait, durably, and say so.
NO_MODEL = "no model is configured: set MAKA_MODEL_BASE_URL and MAKA_MODEL_NAME to start it"


def index_service(services: Services) -> IndexService:
    return IndexService(services.db, services.notifier, services.settings.owner)


def register_index_commands(registry: CommandRegistry) -> None:
    @registry.command("index", usage=USAGE, summary="named memory indexes", admin=True)
    async def index_cmd(ctx: CommandContext, args: list[str]) -> str:
        if not args:
            raise UsageError()
        action, rest = args[0], args[1:]
        service = index_service(ctx.services)
        try:
            if action == "list" and not rest:
                return await _list(ctx, service)
            if action == "create" and len(rest) >= 2:
                index = await service.create(
                    rest[0],
                    " ".join(rest[1:]),
                    ctx.visibility,
                    created_by=ctx.sender_id,
                    interval=ctx.services.settings.index_interval,
                )
                where = "everything you can see" if index.scopes is None else "this chat"
                starts = "it starts shortly" if _has_model(ctx) else NO_MODEL
                return f"Index {index.name!r} created over {where}; {starts}."
            if len(rest) != 1 or action not in ("show", "run", "pause", "resume", "drop"):
                raise UsageError()
            name = rest[0]
            if action == "show":
                return await _show(ctx, service, name)
            if action == "run":
                await service.run_now(name, ctx.visibility)
                return f"Index {name!r}: checking now."
            if action in ("pause", "resume"):
                await service.set_paused(name, ctx.visibility, action == "pause")
                return f"Index {name!r}: {action}d."
            await service.drop(name, ctx.visibility)
            return f"Index {name!r} dropped with its entries."
        except IndexRequestError as exc:
            return str(exc)


async def _list(ctx: CommandContext, service: IndexService) -> str:
    indexes = await service.visible(ctx.visibility)
    if not indexes:
        offers = "\n".join(f"  /index create {n} {c}" for n, c in SUGGESTED)
        return f"No indexes yet. For example:\n{offers}"
    return "\n".join(list_line(i) for i in indexes)


def list_line(index: MemoryIndex) -> str:
    state = "paused" if index.paused else index.status
    pending = "unknown" if index.pending_count is None else str(index.pending_count)
    return f"- {index.name}: {state}, covered to rec-{index.covered_cursor}, pending {pending}"


async def _show(ctx: CommandContext, service: IndexService, name: str) -> str:
    index = await service.find(name, ctx.visibility)
    async with ctx.services.db.read() as tx:
        entries = await repo.count_entries(tx, index.id)
    return describe(index, entries, ctx.services.settings.tz, has_model=_has_model(ctx))


def describe(index: MemoryIndex, entries: int, tz: tzinfo, *, has_model: bool) -> str:
    """An index as `/index show` and `maka index show` print it: every item says what to do
    when it is red."""
    state = "paused" if index.paused else index.status
    advice = "resume it to keep it up to date" if index.paused else STATUS_HELP.get(state, "")
    if not has_model and not index.paused:
        advice = NO_MODEL
    lines = [
        f"Index {index.name!r}: {index.criteria}",
        f"Status: {state} ({advice})",
        f"Entries: {entries}; covered to rec-{index.covered_cursor}; pending "
        f"{'unknown' if index.pending_count is None else index.pending_count}",
        f"Last checked: {_when(index.last_checked_at, tz)}; last organized: "
        f"{_when(index.last_organized_at, tz)}; every {index.interval_seconds // 60} min",
    ]
    if index.range_end is not None:
        done = index.range_done or index.covered_cursor
        lines.append(f"Working: rec-{index.covered_cursor}..rec-{index.range_end}, at rec-{done}")
    if index.last_error:
        lines.append(f"Last error ({_when(index.last_error_at, tz)}): {index.last_error}")
    return "\n".join(lines)


def _when(at: datetime | None, tz: tzinfo) -> str:
    return at.astimezone(tz).strftime("%Y-%m-%d %H:%M") if at else "never"


def _has_model(ctx: CommandContext) -> bool:
    return ctx.services.model_for(ModelRole.INDEXER) is not None
