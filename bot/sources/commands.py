"""`/sync status` for everyone (what this chat may see); `/sync feishu [CHAT]` and
`/sync email` for admins: they ask the sync worker for a sync and answer at once."""

from __future__ import annotations

from bot.assistant.access import NOT_PERMITTED, log_refusal
from bot.assistant.commands import CommandContext, CommandRegistry, UsageError
from bot.sources.adapters import EMAIL, FEISHU, HOW_TO_CONFIGURE, configured_kinds
from bot.sources.component import SYNC_TOPIC
from bot.sources.status import SourceStatus, describe, load_status
from sources.feishu_records import source_name
from storage.repos import sources as repo
from storage.types import utcnow

USAGE = "/sync status | feishu [CHAT] | email"
MAX_LINES = 30


def visible(ctx: CommandContext, status: SourceStatus) -> bool:
    """The owner sees every source; an admin, in a direct message, too (it is operations, not
    content). In a group everyone sees only that group's source; anyone else in a DM only
    their own DM's."""
    if ctx.chat_type != "p2p":
        return status.scope == f"group:{ctx.chat_id}"
    if ctx.role.is_admin:
        return True
    return status.scope == f"dm:{ctx.sender_id}"


def register_sync_commands(registry: CommandRegistry) -> None:
    @registry.command(
        "sync",
        usage=USAGE,
        summary="synced chat history and mail: status; admins: sync Feishu or email now",
    )
    async def sync_cmd(ctx: CommandContext, args: list[str]) -> str:
        if not args or args[0] not in ("status", FEISHU, EMAIL):
            raise UsageError()
        if args[0] == "status":
            if len(args) != 1:
                raise UsageError()
            return await _status(ctx)
        if not ctx.role.is_admin:
            log_refusal(ctx.sender_id, f"/sync {' '.join(args)}", f"{ctx.platform}:{ctx.chat_id}")
            return f"{NOT_PERMITTED}: /sync {args[0]} is for admins"
        kind = args[0]
        if kind not in configured_kinds(ctx.services.settings):
            return f"{kind} is not configured: {HOW_TO_CONFIGURE[kind]}."
        chats = args[1:]
        if kind == EMAIL and chats:
            raise UsageError("/sync email takes no arguments")
        return await _request(ctx, kind, chats)


async def _status(ctx: CommandContext) -> str:
    statuses = [s for s in await load_status(ctx.services.db) if visible(ctx, s)]
    if not statuses:
        if ctx.chat_type != "p2p":
            return "This chat's history has not been synced yet."
        return "Nothing synced yet." + (
            " An admin can run /sync feishu or /sync email."
            if not ctx.role.is_admin
            else " Try /sync feishu or /sync email."
        )
    tz = ctx.services.settings.tz
    lines = [describe(s, tz) for s in statuses[:MAX_LINES]]
    if len(statuses) > MAX_LINES:
        lines.append(f"… and {len(statuses) - MAX_LINES} more (maka sync status lists them all)")
    return "\n".join(lines)


async def _request(ctx: CommandContext, kind: str, chats: list[str]) -> str:
    services = ctx.services
    now = utcnow()
    async with services.db.write() as session:
        await repo.ensure(session, name=kind, kind=kind, scope=None, title=None, now=now)
        if not chats:
            await repo.request_sync(session, [kind], now, {"by": ctx.sender_id})
            what = "Feishu history" if kind == FEISHU else "Email"
        else:
            known = await repo.request_sync(
                session, [source_name(c) for c in chats], now, {"by": ctx.sender_id}
            )
            if known < len(chats):  # not seen yet: observe the chat list, then sync just these
                await repo.request_sync(session, [kind], now, {"by": ctx.sender_id, "only": chats})
            what = f"Feishu history of {', '.join(chats)}"
    await services.notifier.notify(SYNC_TOPIC)
    return f"{what} sync requested. /sync status shows how it goes."
