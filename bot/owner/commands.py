"""/signin and /signout: only the owner, only in their direct message with the assistant."""

from __future__ import annotations

from bot.assistant.access import NOT_PERMITTED, log_refusal
from bot.assistant.commands import CommandContext, CommandRegistry, UsageError
from bot.owner.signin import STATE_TTL, refusal, sign_out, start

ONLY_OWNER_DM = f"{NOT_PERMITTED}: only the owner can sign in, in their direct message with me"
FEISHU_ONLY = "Signing in is done on Feishu: send /signin in your direct message with me there."


def _refused(ctx: CommandContext, text: str) -> str | None:
    if ctx.platform != "feishu":  # the console has no Feishu account to sign in with
        return FEISHU_ONLY
    owner = ctx.services.settings.owner
    if owner and ctx.sender_id == owner and ctx.chat_type == "p2p":
        return None
    log_refusal(ctx.sender_id, text, f"{ctx.platform}:{ctx.chat_id}")
    return ONLY_OWNER_DM


def register_owner_commands(registry: CommandRegistry) -> None:
    @registry.command(
        "signin",
        usage="/signin",
        summary="sign in as yourself on Feishu, so I can read and act as you (owner, DM)",
    )
    async def signin_cmd(ctx: CommandContext, args: list[str]) -> str:
        if args:
            raise UsageError()
        if (refused := _refused(ctx, "/signin")) is not None:
            return refused
        settings = ctx.services.settings
        if (off := refusal(settings)) is not None:
            return off
        link = await start(settings, ctx.services.db, ctx.sender_id)
        minutes = int(STATE_TTL.total_seconds() // 60)
        return (
            f"Open this link to sign in on Feishu (it works once, for {minutes} minutes):\n{link}"
        )

    @registry.command(
        "signout",
        usage="/signout",
        summary="forget your Feishu sign-in (owner, DM)",
    )
    async def signout_cmd(ctx: CommandContext, args: list[str]) -> str:
        if args:
            raise UsageError()
        if (refused := _refused(ctx, "/signout")) is not None:
            return refused
        if await sign_out(ctx.services.db):
            return "Signed out: your Feishu tokens are deleted."
        return "You were not signed in."
