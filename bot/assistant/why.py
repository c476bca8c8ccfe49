"""`/why ID`: what made the assistant write on its own. Every message it sends without being
asked (a discovery finding, a task's result or failure, an index notice) ends with
"(why: /why ID)"; ID is the notice that started that turn. The answer shows that notice and
what stands behind it: the finding with its evidence refs, or the task with its state and last
settle. Only in the chat the message went to (the visibility rule: a notice belongs to its
conversation).

`/why action N`: why an outward action happened (bot/actions/): who asked, where and why, who
approved it (the owner, or which standing /allow) and when, and what came of it. The owner's
DM sees every action; another chat only those asked for there."""

from __future__ import annotations

from datetime import tzinfo

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.actions.ledger import line, when
from bot.assistant.commands import CommandContext, CommandRegistry, UsageError
from bot.parsing import parse_id
from storage.models import Finding, InboxItem, Matter
from storage.repos import actions, operations

USAGE = (
    "/why ID (the number after 'why:' in a message the assistant sent on its own) | /why action N"
)


def register_why_command(registry: CommandRegistry) -> None:
    @registry.command("why", usage=USAGE, summary="why the assistant wrote on its own")
    async def why_cmd(ctx: CommandContext, args: list[str]) -> str:
        if len(args) == 2 and args[0] == "action":
            return await why_action(ctx, args[1])
        if len(args) != 1:
            raise UsageError()
        try:
            item_id = parse_id(args[0])
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        async with ctx.services.db.read() as tx:
            item = await tx.get(InboxItem, item_id) if item_id is not None else None
            mine = item is not None and item.conversation_id == ctx.conversation_id
            if item is None or not mine or item.kind == "user_message":
                return f"No message {args[0].removeprefix('#')} of mine here."
            batch = [item]
            if item.batch_id:
                batch = list(
                    (
                        await tx.scalars(
                            select(InboxItem)
                            .where(InboxItem.batch_id == item.batch_id)
                            .order_by(InboxItem.id)
                        )
                    ).all()
                )
            lines = [
                await explain(tx, i, ctx.services.settings.tz)
                for i in batch
                if i.kind != "user_message"
            ]
        return "\n".join(["I wrote because of:", *lines])


async def why_action(ctx: CommandContext, number: str) -> str:
    try:
        action_id = parse_id(number)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    within = ctx.visibility.only_conversation
    async with ctx.services.db.read() as tx:
        action = await actions.get(tx, action_id) if action_id is not None else None
    seen = action is not None and not ctx.visibility.sees_nothing
    if action is None or not seen or (within is not None and action.conversation_id != within):
        return f"No action {number.removeprefix('#')} here."
    tz = ctx.services.settings.tz
    reason = action.reason or "(no reason given)"
    return (
        f"Action #{action.id} ({action.kind}), asked {when(action.created_at, tz)} because: "
        f"{reason}\n{line(action, tz)}"
    )


async def explain(tx: AsyncSession, item: InboxItem, tz: tzinfo) -> str:
    """One notice and what stands behind it, as a line (also shown on the status page)."""
    when = item.created_at.astimezone(tz).strftime("%Y-%m-%d %H:%M")
    payload = item.payload
    if item.kind == "finding":
        finding = await tx.get(Finding, int(payload.get("finding", 0)))
        if finding is not None:
            return (
                f"- a discovery finding (F-{finding.id}, {when}): {finding.text} — evidence: "
                f"{', '.join(finding.refs)} (ask me to show any of them)"
            )
    if item.kind == "task_update":
        matter = await tx.get(Matter, int(payload.get("matter_id", 0)))
        if matter is not None:
            settle = await operations.latest(tx, operations.SETTLE, matter.id)
            settled = ""
            if settle is not None:
                outcome = settle.outcome or {}
                settled = (
                    f"; last settle {settle.created_at.astimezone(tz):%Y-%m-%d %H:%M}: "
                    f"{outcome.get('disposition', '')} {outcome.get('summary', '')}".rstrip()
                )
            return (
                f"- task #{matter.id} {payload.get('task', '')!r} reported "
                f"{payload.get('update', 'news')} ({when}); it is {matter.status}{settled}"
            )
    return f"- {item.kind} ({when}): {str(payload.get('text', ''))[:300]}"
