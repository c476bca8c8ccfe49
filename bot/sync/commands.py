"""`/sync status` for everyone (what this chat may see); `/sync feishu [CHAT]` and
`/sync email`, `/sync docs`, `/sync tasks` for admins: they ask the sync worker for a sync
and answer at once;
`/sync share SOURCE` and `/sync unshare SOURCE` for the owner: what else this chat may see;
`/sync chats ...` for the owner in their DM: which of their own chats are read as them;
`/sync resume NAME` for the owner in their DM: a source or chat a forget stopped syncs again."""

from __future__ import annotations

from bot.assistant.access import NOT_PERMITTED, Role, log_refusal
from bot.assistant.commands import CommandContext, CommandRegistry, UsageError
from bot.sync.adapters import CHATS, EMAIL, FEISHU, HOW_TO_CONFIGURE, KINDS, configured_kinds
from bot.sync.chat_commands import chats_command
from bot.sync.component import SYNC_TOPIC
from bot.sync.resume import resume_command, stopped_answer
from bot.sync.status import describe, load_status
from sources.feishu.records import source_name
from storage.repos import source_shares
from storage.repos import sources as repo
from storage.types import utcnow

USAGE = (
    "/sync status | feishu [CHAT] | email | calendar | docs | tasks | share SOURCE | "
    "unshare SOURCE | chats [add|remove CHAT | now] | resume NAME"
)
MAX_LINES = 30
SHARING = ("share", "unshare")


def register_sync_commands(registry: CommandRegistry) -> None:
    @registry.command(
        "sync",
        usage=USAGE,
        summary="synced chat history and mail: status; admins: sync now; owner: share a "
        "source with this chat",
    )
    async def sync_cmd(ctx: CommandContext, args: list[str]) -> str:
        if not args or args[0] not in ("status", "resume", *KINDS, *SHARING):
            raise UsageError()
        if args[0] == "status":
            if len(args) != 1:
                raise UsageError()
            return await _status(ctx)
        if args[0] in SHARING:
            return await _share(ctx, args[0], args[1:])
        if args[0] == CHATS:
            return await chats_command(ctx, args[1:])
        if args[0] == "resume":
            return await resume_command(ctx, args[1:])
        if not ctx.role.is_admin:
            log_refusal(ctx.sender_id, f"/sync {' '.join(args)}", f"{ctx.platform}:{ctx.chat_id}")
            return f"{NOT_PERMITTED}: /sync {args[0]} is for admins"
        kind = args[0]
        if kind not in configured_kinds(ctx.services.settings):
            return f"{kind} is not configured: {HOW_TO_CONFIGURE[kind]}."
        chats = args[1:]
        if kind != FEISHU and chats:
            raise UsageError(f"/sync {kind} takes no arguments")
        stopped = await stopped_answer(ctx, [source_name(c) for c in chats] or [kind])
        if stopped is not None:
            return stopped
        return await _request(ctx, kind, chats)


async def _status(ctx: CommandContext) -> str:
    statuses = [s for s in await load_status(ctx.services.db) if ctx.visibility.sees_scope(s.scope)]
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
    async with services.db.write() as tx:
        await repo.ensure(tx, name=kind, kind=kind, scope=None, title=None, now=now)
        if not chats:
            await repo.request_sync(tx, [kind], now, {"by": ctx.sender_id})
            what = {FEISHU: "Feishu history", EMAIL: "Email"}.get(kind, f"The owner's {kind}")
        else:
            known = await repo.request_sync(
                tx, [source_name(c) for c in chats], now, {"by": ctx.sender_id}
            )
            if known < len(chats):  # not seen yet: observe the chat list, then sync just these
                await repo.request_sync(tx, [kind], now, {"by": ctx.sender_id, "only": chats})
            what = f"Feishu history of {', '.join(chats)}"
    await services.notifier.notify(SYNC_TOPIC)
    return f"{what} sync requested. /sync status shows how it goes."


async def _share(ctx: CommandContext, action: str, args: list[str]) -> str:
    """The owner, in the chat to share with, names a source (as /sync status shows it)."""
    if ctx.role is not Role.OWNER:
        log_refusal(ctx.sender_id, f"/sync {action} {' '.join(args)}", ctx.chat_id)
        return f"{NOT_PERMITTED}: only the owner shares sources"
    if len(args) != 1:
        raise UsageError(f"/sync {action} takes one source name, e.g. email:INBOX")
    name = args[0]
    async with ctx.services.db.write() as tx:
        source = await repo.get(tx, name)
        if source is None or not source.scope:
            return f"No source {name!r} (in your DM, /sync status lists them)."
        if action == "share":
            await source_shares.share(
                tx,
                source=name,
                conversation_id=ctx.conversation_id,
                by=ctx.sender_id,
                now=utcnow(),
            )
            return f"{name} is shared with this chat: what it holds can be found here."
        removed = await source_shares.unshare(tx, source=name, conversation_id=ctx.conversation_id)
    if not removed:
        return f"{name} was not shared with this chat."
    return f"{name} is no longer shared with this chat."
