"""`/forget …`: the owner, in their DM, has the assistant forget a source, chat, person or
date range. First the plan (what it will remove, and what it does to syncing), then
`… confirm` stores a durable request (bot/forget/batch.py), stops syncing a whole source or
chat (bot/forget/syncing.py), and answers with what was removed once it is done."""

from __future__ import annotations

import asyncio

from bot.assistant.access import NOT_PERMITTED, Role, log_refusal
from bot.assistant.commands import CommandContext, CommandRegistry, UsageError
from bot.forget.batch import summary
from bot.forget.parse import USAGE, parse_words
from bot.forget.syncing import GOES_ON, plan_line, stopped_line
from bot.forget.syncing import stop as stop_syncing
from bot.forget.worker import TOPIC
from storage.models import ForgetRequest
from storage.repos import forgets
from storage.types import utcnow

OWNER_ONLY = f"{NOT_PERMITTED}: only the owner has me forget, in their DM with me"
ANSWER_WITHIN = 30.0  # seconds the confirmation waits to say what went; then: under way
POLL = 0.2


def register_forget_commands(registry: CommandRegistry) -> None:
    @registry.command(
        "forget",
        usage=USAGE,
        summary="owner: forget a source, chat, person or date range",
        admin=True,
    )
    async def forget_cmd(ctx: CommandContext, args: list[str]) -> str:
        # The owner's role (their Feishu id, or the console, which speaks as the owner) where
        # they see everything: their DM or the console, never a group.
        if not ctx.visibility.everything or ctx.role is not Role.OWNER:
            log_refusal(
                ctx.sender_id, " ".join(["/forget", *args]), f"{ctx.platform}:{ctx.chat_id}"
            )
            return OWNER_ONLY
        if args == ["status"]:
            return await _status(ctx)
        if not args:
            raise UsageError()
        try:
            sel, confirmed = parse_words(args, ctx.services.settings.tz)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        if not confirmed:
            return await _plan(ctx, sel, args)
        return await _forget(ctx, sel)


async def _plan(ctx: CommandContext, sel: forgets.Selector, args: list[str]) -> str:
    async with ctx.services.db.read() as tx:
        counts = await forgets.count_matching(tx, sel)
        syncing = await plan_line(tx, sel)
    if not counts["records"] and not counts["attachments"]:
        nothing = f"Nothing I keep matches {sel.describe()}: there is nothing to forget."
        if not syncing or syncing == GOES_ON:
            return nothing
        return f"{nothing} {syncing} To stop it, send: /forget {' '.join(args)} confirm"
    plan = (
        f"Forgetting {sel.describe()} will remove {counts['records']} records and "
        f"{counts['attachments']} attachments, with the index entries, notebook notes, "
        f"findings, turn-log lines, answers and summaries citing them."
    )
    return "\n".join(
        [plan, *([syncing] if syncing else []), f"To do it, send: /forget {' '.join(args)} confirm"]
    )


async def _forget(ctx: CommandContext, sel: forgets.Selector) -> str:
    services = ctx.services
    now = utcnow()
    async with services.db.write() as tx:
        request_id = await forgets.create(tx, sel, ctx.sender_id, now)
        stopped = await stop_syncing(tx, sel, request_id, now)
        await services.notifier.publish(tx, TOPIC)
    services.notifier.wake_local(TOPIC)
    after = f"\n{stopped_line(sel, stopped)}" if stopped else ""
    deadline = asyncio.get_running_loop().time() + ANSWER_WITHIN
    while asyncio.get_running_loop().time() < deadline:
        async with services.db.read() as tx:
            row = await forgets.get(tx, request_id)
        if row is not None and row.status != forgets.PENDING:
            return _line(row) + after
        await asyncio.sleep(POLL)
    return (
        f"Forgetting {sel.describe()} (#{request_id}) is under way; /forget status shows it."
        + after
    )


def _line(row: ForgetRequest) -> str:
    sel = forgets.Selector.from_json(row.selector)
    if row.status == forgets.DONE:
        return f"Forgot {sel.describe()} (#{row.id}): removed {summary(row.removed)}."
    if row.status == forgets.PARKED:
        return f"Forgetting {sel.describe()} (#{row.id}) stopped: {row.error}"
    error = f"; last try failed: {row.error}" if row.error else ""
    return f"Forgetting {sel.describe()} (#{row.id}): so far {summary(row.removed)}{error}"


async def _status(ctx: CommandContext) -> str:
    async with ctx.services.db.read() as tx:
        rows = await forgets.recent(tx)
    if not rows:
        return "Nothing forgotten yet."
    return "\n".join(_line(r) for r in rows)
