"""`/matters list | show N | pause N | resume N | cancel N`: a chat lists and shows the Matters
it may see (the visibility rule); admins and the person who asked for one may steer it."""

from __future__ import annotations

from datetime import datetime

from bot.assistant.access import NOT_PERMITTED, log_refusal
from bot.assistant.commands import CommandContext, CommandRegistry, UsageError
from bot.channels.cards import MAX_MARKDOWN, Button, Card
from bot.matters import waits
from bot.matters.service import MatterService
from bot.parsing import parse_id
from storage.models import Matter
from storage.repos import matters
from storage.repos.matters import CANCELLED, COMPLETED, PAUSED, WAITING

USAGE = "/matters list | show N | pause N | resume N | cancel N"


DONE = {"pause": "Paused", "resume": "Resumed", "cancel": "Cancelled"}


def _redraw(args: list[str]) -> tuple[str, str] | None:
    """A Matter's button redraws its card (`/matters show N`)."""
    if len(args) == 2 and args[0] in DONE:
        return f"/matters show {args[1]}", DONE[args[0]]
    return None


def register_matter_commands(registry: CommandRegistry) -> None:
    @registry.command(
        "matters", usage=USAGE, summary="see and steer long-running tasks", redraw=_redraw
    )
    async def matters_cmd(ctx: CommandContext, args: list[str]) -> str | Card:
        if not args:
            raise UsageError()
        action, rest = args[0], args[1:]
        if action == "list" and not rest:
            return await _list(ctx)
        if action not in ("show", "pause", "resume", "cancel") or len(rest) != 1:
            raise UsageError()
        try:
            matter_id = parse_id(rest[0], what="a task number")
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        matter = await _get(ctx, matter_id) if matter_id is not None else None
        if matter is None or not ctx.visibility.sees_conversation(matter.conversation_id):
            return f"No task #{rest[0].removeprefix('#')}."  # one answer: existence is not shown
        if not (ctx.role.is_admin or matter.requested_by == ctx.sender_id):
            log_refusal(ctx.sender_id, f"/matters {action} {matter.id}", ctx.chat_id)
            return f"{NOT_PERMITTED}: task #{matter.id} is not yours"
        if action == "show":
            return _show(ctx, matter)
        service = MatterService(
            ctx.services.db, ctx.services.notifier, cards=ctx.services.settings.progress_cards
        )
        changed = await {
            "pause": lambda: service.pause(matter.id, "paused by " + ctx.sender_id, report=False),
            "resume": lambda: service.resume(matter.id),
            "cancel": lambda: service.cancel(matter.id),
        }[action]()
        if changed:
            return f"Task #{matter.id}: {action}d."
        return f"Task #{matter.id} is {matter.status}; nothing to {action}."


async def _get(ctx: CommandContext, matter_id: int) -> Matter | None:
    async with ctx.services.db.read() as tx:
        return await tx.get(Matter, matter_id)


async def _list(ctx: CommandContext) -> str:
    async with ctx.services.db.read() as tx:
        if ctx.visibility.sees_nothing:
            return "No tasks."
        rows = await matters.listing(tx, conversation_id=ctx.visibility.only_conversation)
    if not rows:
        return "No tasks."
    return "\n".join(
        f"#{m.id} {m.status}: {m.objective[:60]}"
        + (f" (wakes {_when(ctx, m.next_wake_at)})" if m.next_wake_at else "")
        + (
            f", waiting for: {waits.describe(m.waits_on)}"
            if m.status == WAITING and m.waits_on
            else ""
        )
        for m in rows
    )


def _show(ctx: CommandContext, m: Matter) -> Card:
    """The Matter as a card, with the buttons that fit its status."""
    lines = [
        f"**{m.status}**, revision {m.revision}, {m.run_count} turns",
        f"objective: {m.objective}",
    ]
    for amendment in m.amendments[-3:]:
        lines.append(f"amended: {str(amendment.get('text', ''))[:200]}")
    if len(m.amendments) > 3:
        lines.append(f"({len(m.amendments)} amendments in all)")
    if m.rejection_count:
        lines.append(f"reviewer rejections: {m.rejection_count}")
    if m.state_text:
        lines.append(f"state: {m.state_text}")
    if m.next_wake_at:
        lines.append(f"next wake: {_when(ctx, m.next_wake_at)}")
    lines += _waiting(m)
    if m.last_error:
        lines.append(f"last error: {m.last_error}")
    if m.work_record:
        last = m.work_record[-1]
        lines.append(f"last settle: {last['disposition']} — {last['summary']}")
    return Card(f"Task #{m.id}", "\n".join(lines)[:MAX_MARKDOWN], _buttons(m))


def _waiting(m: Matter) -> list[str]:
    """What it waits for: the owner's event or task in words, and once met, what happened."""
    if not m.waits_on:
        return [f"waiting for: {m.waiting_for}"] if m.waiting_for else []
    target = waits.describe(m.waits_on)
    lines = [f"waiting for: {target}"]
    if m.waiting_for and m.waiting_for != target:
        lines.append(f"why: {m.waiting_for}")
    if m.waits_on.get("outcome"):
        lines.append(f"woke: {m.waits_on['outcome']}")
    return lines


def _buttons(m: Matter) -> tuple[Button, ...]:
    """What can still be done to it: nothing once it is over."""
    if m.status in (COMPLETED, CANCELLED):
        return ()
    steer = (
        Button("Resume", {"command": f"/matters resume {m.id}"}, "primary")
        if m.status == PAUSED
        else Button("Pause", {"command": f"/matters pause {m.id}"})
    )
    return (steer, Button("Cancel", {"command": f"/matters cancel {m.id}"}, "danger"))


def _when(ctx: CommandContext, at: datetime | None) -> str:
    """Stored in UTC, shown in the owner's time zone."""
    return at.astimezone(ctx.services.settings.tz).strftime("%Y-%m-%d %H:%M %Z") if at else "-"
