"""`/sync chats [add|remove CHAT | now]`: the owner, in their DM, chooses which of their own
chats are read as them (sources/feishu/owner_chats.py). `/sync chats` lists the owner's groups
as Feishu lists them to the owner, marking the chosen ones and those the bot is in (read by
the Feishu history sync already); a direct message is added by its chat id (Feishu lists no
p2p chats)."""

from __future__ import annotations

from typing import Any

from bot.assistant.access import NOT_PERMITTED, Role, log_refusal
from bot.assistant.commands import CommandContext, UsageError
from bot.owner.api import owner_api
from bot.owner.tokens import OwnerTokens
from bot.sync.adapters import CHATS, HOW_TO_CONFIGURE, as_owner, owner_sign_in_configured
from bot.sync.component import SYNC_TOPIC
from sources.base import SourceError
from sources.feishu.owner_api import FeishuBusy
from sources.feishu.owner_units import chat_unit
from storage.repos import owner_chats, source_stops
from storage.repos import sources as repo
from storage.types import utcnow

USAGE = "/sync chats | chats add CHAT | chats remove CHAT | chats now (CHAT: a chat id or name)"
ONLY_OWNER_DM = f"{NOT_PERMITTED}: only the owner chooses their chats, in their DM with me"
FEISHU_ONLY = "Your chats are chosen on Feishu: send /sync chats in your DM with me there."
MAX_LINES = 40


async def chats_command(ctx: CommandContext, args: list[str]) -> str:
    text = " ".join(["/sync chats", *args])
    if ctx.platform != "feishu":  # the console speaks as the owner but has no Feishu account
        return FEISHU_ONLY
    if not ctx.visibility.everything or ctx.role is not Role.OWNER:  # the one role rule
        log_refusal(ctx.sender_id, text, f"{ctx.platform}:{ctx.chat_id}")
        return ONLY_OWNER_DM
    if not owner_sign_in_configured(ctx.services.settings):
        return f"{CHATS} is not configured: {HOW_TO_CONFIGURE[CHATS]}."
    if args and args[0] in ("add", "remove") and len(args) >= 2:
        return await _choose(ctx, args[0], " ".join(args[1:]))
    if args == ["now"]:
        return await _request(ctx, "Your chats' sync requested.")
    if args:
        raise UsageError(USAGE)
    return await _list(ctx)


async def _groups(ctx: CommandContext) -> list[dict[str, Any]]:
    """The owner's groups, read as the owner; SourceError with one line when not possible."""
    from sources.feishu.owner_chats import list_groups  # loads the Feishu SDK: on use only

    services = ctx.services
    token = as_owner(OwnerTokens(services.settings, services.db, services.host.instance_id))
    api = owner_api(services.settings, services.db, token)
    try:
        return await list_groups(api)
    except FeishuBusy as exc:
        raise SourceError(f"Feishu is busy, try again later ({exc})") from None
    finally:
        await api.aclose()


async def _list(ctx: CommandContext) -> str:
    from sources.feishu.owner_chats import bot_chats

    try:
        groups = await _groups(ctx)
    except SourceError as exc:
        return f"Could not list your chats: {exc}"
    async with ctx.services.db.read() as tx:
        chosen = {c.chat_id: c for c in await owner_chats.chosen(tx)}
        # A chosen chat that a forget stopped is not read until /sync chats add turns it on.
        stopped = await source_stops.stopped_among(tx, [chat_unit(i) for i in chosen])
    taken = await bot_chats(ctx.services.db, [str(g["chat_id"]) for g in groups])
    lines = []
    for group in groups[:MAX_LINES]:
        chat_id = str(group["chat_id"])
        mark = (
            "[bot is in]" if chat_id in taken
            else "[stopped by forget]" if chat_unit(chat_id) in stopped
            else "[x]" if chat_id in chosen
            else "[ ]"
        )  # fmt: skip
        lines.append(f"{mark} {group.get('name') or '(no name)'} {chat_id}")
    if len(groups) > MAX_LINES:
        lines.append(f"… and {len(groups) - MAX_LINES} more")
    listed = {str(g["chat_id"]) for g in groups}
    for chat_id, chat in chosen.items():
        if chat_id not in listed:
            mark = "[stopped by forget]" if chat_unit(chat_id) in stopped else "[x]"
            lines.append(f"{mark} {chat.title or chat.chat_type} {chat_id}")
    if not lines:
        return "You are in no groups I can see. Add a direct message by its chat id."
    head = "Your chats ([x] read as you; /sync chats add|remove CHAT; add turns a stopped one on):"
    return "\n".join([head, *lines])


async def _choose(ctx: CommandContext, action: str, wanted: str) -> str:
    from sources.feishu.owner_chats import bot_chats

    db = ctx.services.db
    if action == "remove":
        async with db.write() as tx:
            chosen = await owner_chats.chosen(tx)
            match = [c for c in chosen if wanted in (c.chat_id, c.title)]
            if len(match) != 1:
                return f"{wanted!r} is not one of your chosen chats (/sync chats lists them)."
            await owner_chats.unchoose(tx, match[0].chat_id)
        name = match[0].title or match[0].chat_id
        return f"{name} is no longer read (what was stored stays searchable in your DM)."
    try:
        groups = await _groups(ctx)
    except SourceError as exc:
        return f"Could not list your chats: {exc}"
    found = [g for g in groups if wanted in (g.get("chat_id"), g.get("name"))]
    if len(found) > 1:
        ids = ", ".join(str(g["chat_id"]) for g in found)
        return f"More than one chat is called {wanted!r}: add it by id ({ids})."
    if found:
        chat_id, title, chat_type = str(found[0]["chat_id"]), found[0].get("name"), "group"
    elif wanted.startswith("oc_"):  # not a group of the owner's: a direct message by its id
        chat_id, title, chat_type = wanted, None, "p2p"
    else:
        return f"No chat of yours is called {wanted!r} (/sync chats lists them)."
    if chat_id in await bot_chats(db, [chat_id]):
        return (
            f"I am in {title or chat_id} already: its history is synced with /sync feishu "
            "and seen where the bot is."
        )
    async with db.write() as tx:
        new = await owner_chats.choose(
            tx, chat_id=chat_id, title=title, chat_type=chat_type, by=ctx.sender_id, now=utcnow()
        )
        # Adding a chat a forget stopped is turning it back on, as /sync resume does.
        unit = chat_unit(chat_id)
        stopped = [r.name for r in await source_stops.stopped(tx, unit) if r.name == unit]
        await source_stops.resume(tx, stopped, utcnow())
    name = title or chat_id
    if stopped:
        return await _request(
            ctx,
            f"{name} will be read as you again: only what I have not had comes; what you "
            "forgot stays forgotten.",
        )
    if not new:
        return f"{name} is read already."
    return await _request(ctx, f"{name} will be read as you, seen only here unless shared.")


async def _request(ctx: CommandContext, said: str) -> str:
    services = ctx.services
    now = utcnow()
    async with services.db.write() as tx:
        await repo.ensure(tx, name=CHATS, kind=CHATS, scope=None, title=None, now=now)
        await repo.request_sync(tx, [CHATS], now, {"by": ctx.sender_id})
    await services.notifier.notify(SYNC_TOPIC)
    return f"{said} /sync status shows how it goes."
