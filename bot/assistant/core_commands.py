"""The Bot's own commands: /help, /whoami, /status, /admins."""

from __future__ import annotations

from datetime import datetime, time

from bot.assistant.access import Role
from bot.assistant.commands import CommandContext, CommandRegistry, UsageError
from bot.assistant.failures import parked_lines
from bot.assistant.visibility import USAGE_ELSEWHERE
from bot.channels.api_usage import ApiUsageCounter
from bot.owner.tokens import sign_in_state
from storage.repos import actions, admins, attachments, inbox, model_calls, outbox
from storage.types import utcnow


def register_core_commands(registry: CommandRegistry) -> None:
    @registry.command("help", usage="/help", summary="list the commands you can use")
    async def help_cmd(ctx: CommandContext, args: list[str]) -> str:
        lines = ["Commands:"]
        lines += [f"  {c.usage}  — {c.summary}" for c in registry.visible_to(ctx.role)]
        if not ctx.services.model:
            lines.append("No model is configured: plain messages get a how-to reply.")
        return "\n".join(lines)

    @registry.command("whoami", usage="/whoami", summary="who the assistant thinks you are")
    async def whoami_cmd(ctx: CommandContext, args: list[str]) -> str:
        return (
            f"You are {ctx.sender_id} ({ctx.role.value}) in {ctx.chat_type} chat "
            f"{ctx.chat_id} on {ctx.platform}."
        )

    @registry.command(
        "status",
        usage="/status",
        summary="workers, queues, failed sends, Feishu API and model usage",
        admin=True,
    )
    async def status_cmd(ctx: CommandContext, args: list[str]) -> str:
        return await status_report(ctx)

    @registry.command(
        "admins",
        usage="/admins list | add @user | remove @user",
        summary="see or change who may run admin commands",
        admin=True,
    )
    async def admins_cmd(ctx: CommandContext, args: list[str]) -> str:
        if not args or args[0] not in ("list", "add", "remove"):
            raise UsageError()
        settings, db = ctx.services.settings, ctx.services.db
        if args[0] == "list":
            if len(args) != 1:
                raise UsageError()
            async with db.read() as tx:
                added = await admins.all_ids(tx)
            env = [a for a in settings.admins if a not in added]
            lines = [f"owner: {settings.owner or '(MAKA_OWNER not set)'}"]
            lines += [f"admin: {a} (MAKA_ADMINS)" for a in env]
            lines += [f"admin: {a}" for a in added]
            return "\n".join(lines)
        if len(args) != 2:
            raise UsageError()
        target = ctx.mentioned_open_id(args[1])
        if target is None:
            raise UsageError(f"cannot tell who {args[1]} is: @mention them")
        async with db.write() as tx:
            if args[0] == "add":
                added_now = await admins.add(tx, target, ctx.sender_id, utcnow())
                return f"{target} is now an admin." if added_now else f"{target} is an admin."
            if target in settings.admins:
                return f"{target} is an admin through MAKA_ADMINS; change it there."
            removed = await admins.remove(tx, target)
            return f"{target} is no longer an admin." if removed else f"{target} was not an admin."


async def status_report(ctx: CommandContext) -> str:
    """The service's health everywhere; queues of what this chat may see; usage (the owner's
    costs) only where everything may be seen."""
    services = ctx.services
    tz = services.settings.tz
    everything = ctx.visibility.everything
    within = ctx.visibility.only_conversation
    where = "" if everything else " in this chat"
    async with services.db.read() as tx:
        pending_inbox = await inbox.count_pending(tx, within)
        outbox_states = await outbox.count_unfinished(tx, within)
        parked = await parked_lines(tx, within, tz)
        if everything:  # counts only: which files they are is on the status page
            stuck = (await attachments.counts_by_state(tx)).get(attachments.PARKED, 0)
            if stuck:
                parked.append(
                    f"attachments: {stuck} parked (could not be downloaded or read after "
                    "every try; the status page lists them)"
                )
            by_state = await actions.count_by_state(tx)  # outward actions (/actions lists them)
            if by_state:
                named = (s for s in actions.STATES if by_state.get(s))
                parked.append("actions: " + ", ".join(f"{by_state[s]} {s}" for s in named))
    states = services.host.status().items()
    pending, failed, uncertain = (
        outbox_states.get(k, 0) for k in ("pending", "failed", "uncertain")
    )
    workers = (
        ", ".join(f"{name}{'' if state.alive else ' (down)'}" for name, state in states)
        or "none (web role)"
    )
    model = services.model.model if services.model else "not configured"
    search_problem = await services.search.health()
    lines = [
        f"workers: {workers}",
        f"inbox{where}: {pending_inbox} waiting; outbox{where}: {pending} pending, "
        f"{failed} failed, {uncertain} uncertain",
        f"search ({services.settings.search_backend.value}): {search_problem or 'ok'}",
        *parked,
    ]
    if services.model is not None:  # what the turns last met: a model without tool calls
        lines.append(services.tool_support.line())
    if everything:  # the owner's own sign-in: only where everything may be seen
        lines.append((await sign_in_state(services)).line())
    if not ctx.visibility.sees_usage:
        return "\n".join([*lines, f"model: {model}; {USAGE_ELSEWHERE}"])
    start_of_day = datetime.combine(utcnow().astimezone(tz).date(), time(), tz)
    async with services.db.read() as tx:
        usage = await model_calls.usage_since(tx, start_of_day)
    feishu = await ApiUsageCounter(services.db, "feishu", tz).totals()
    return "\n".join(
        [
            *lines,
            f"Feishu API calls: {feishu.today} today, {feishu.this_month} this month",
            f"model ({model}): {usage.calls} calls today, {usage.input_tokens} tokens in, "
            f"{usage.output_tokens} out{' (est.)' if usage.estimated else ''}, "
            f"{usage.errors} errors",
        ]
    )


__all__ = ["Role", "register_core_commands", "status_report"]
