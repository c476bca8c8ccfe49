"""/approve N, /reject N (the approval card's buttons run them as the clicker), /allow, and
/actions: the owner decides; anyone may list the actions asked for in their own chat (the
visibility rule: the owner's DM sees every action, another chat only its own)."""

from __future__ import annotations

from bot.actions.approval import card_view, where_of
from bot.actions.ledger import ACTIONS_TOPIC, line, when
from bot.actions.registry import kind_names
from bot.assistant.access import NOT_PERMITTED, Role, log_refusal
from bot.assistant.commands import CommandContext, CommandRegistry, Redraw, UsageError
from bot.channels.cards import Card
from bot.parsing import NotANumber, parse_id
from storage.repos import actions as repo
from storage.repos import conversations
from storage.types import utcnow

OWNER_ONLY = f"{NOT_PERMITTED}: only the owner approves or allows actions"
ALLOW_USAGE = "/allow KIND [here] | /allow list | /allow revoke N"
ACTIONS_USAGE = "/actions [show N]"
RECENT = 20


def _number(arg: str) -> int:
    try:
        number = parse_id(arg)
    except NotANumber as exc:
        raise UsageError(str(exc)) from None
    return number if number is not None else 0  # 0: no row has it


def _owner_only(ctx: CommandContext, text: str) -> str | None:
    if ctx.role is Role.OWNER:
        return None
    log_refusal(ctx.sender_id, text, f"{ctx.platform}:{ctx.chat_id}")
    return OWNER_ONLY


def _redraw(done: str) -> Redraw:
    def redraw(args: list[str]) -> tuple[str, str] | None:
        return (f"/actions show {args[0]}", done) if len(args) == 1 else None

    return redraw


async def decide(ctx: CommandContext, args: list[str], *, approve: bool) -> str:
    verb = "approve" if approve else "reject"
    if len(args) != 1:
        raise UsageError()
    refused = _owner_only(ctx, f"/{verb} {' '.join(args)}")
    if refused:
        return refused
    action_id = _number(args[0])
    services, now = ctx.services, utcnow()
    tz = services.settings.tz
    to = repo.APPROVED if approve else repo.REJECTED
    async with services.db.write() as tx:
        moved = action_id > 0 and await repo.decide(tx, action_id, to=to, by=ctx.sender_id, now=now)
        if not moved and action_id > 0:
            await repo.expire_overdue(tx, now)  # an overdue one says so, below
        action = await repo.get(tx, action_id) if action_id > 0 else None
    if action is None:
        return f"No action #{args[0].removeprefix('#')}."
    if moved:
        if approve:
            await services.notifier.notify(ACTIONS_TOPIC)
            return f"Approved action #{action.id}: {action.summary}. It runs now."
        return f"Rejected action #{action.id}: nothing was done."
    if action.state == repo.EXPIRED:
        return (
            f"Action #{action.id} expired at {when(action.expires_at, tz)} without an answer; "
            "nothing was done. Ask again if it is still wanted."
        )
    return f"Action #{action.id} was already decided: {line(action, tz)}"


def register_action_commands(registry: CommandRegistry) -> None:
    @registry.command(
        "approve",
        usage="/approve N",
        summary="approve action #N (the owner)",
        redraw=_redraw("Approved"),
    )
    async def approve_cmd(ctx: CommandContext, args: list[str]) -> str:
        return await decide(ctx, args, approve=True)

    @registry.command(
        "reject",
        usage="/reject N",
        summary="reject action #N (the owner)",
        redraw=_redraw("Rejected"),
    )
    async def reject_cmd(ctx: CommandContext, args: list[str]) -> str:
        return await decide(ctx, args, approve=False)

    @registry.command(
        "allow",
        usage=ALLOW_USAGE,
        summary="let a kind of action run without asking (the owner)",
    )
    async def allow_cmd(ctx: CommandContext, args: list[str]) -> str:
        if not args:
            raise UsageError()
        refused = _owner_only(ctx, f"/allow {' '.join(args)}")
        if refused:
            return refused
        services, now = ctx.services, utcnow()
        if args == ["list"]:
            async with services.db.read() as tx:
                held = await repo.permissions(tx)
                places = {
                    p.conversation_id: where_of(await conversations.get(tx, p.conversation_id))
                    for p in held
                    if p.conversation_id is not None
                }
            if not held:
                return "No standing permissions: every action asks you first."
            return "\n".join(
                f"#{p.id} {p.kind} "
                + (f"in {places[p.conversation_id]}" if p.conversation_id else "everywhere")
                + f" (since {when(p.created_at, services.settings.tz)})"
                for p in held
            )
        if args[0] == "revoke":
            if len(args) != 2:
                raise UsageError()
            number = _number(args[1])
            async with services.db.write() as tx:
                revoked = number > 0 and await repo.revoke(tx, number, now)
            if not revoked:
                return f"No standing permission #{args[1].removeprefix('#')}."
            return f"Revoked /allow #{number}: that kind asks you first again."
        kind, rest = args[0], args[1:]
        if kind not in kind_names():
            raise UsageError(f"no action kind {kind!r}; kinds: {', '.join(kind_names())}")
        if rest not in ([], ["here"]):
            raise UsageError()
        everywhere = not rest
        if everywhere and ctx.chat_type != "p2p":
            raise UsageError(f"in a group say /allow {kind} here; everywhere only in your DM")
        where = None if everywhere else ctx.conversation_id
        async with services.db.write() as tx:
            permission, new = await repo.allow(
                tx, kind=kind, conversation_id=where, by=ctx.sender_id, now=now
            )
        scope = "everywhere (your own requests)" if everywhere else "in this chat (anyone here)"
        said = "now allowed" if new else "was already allowed"
        return f"/allow #{permission.id}: {kind} {said} {scope}, without asking you."

    @registry.command("actions", usage=ACTIONS_USAGE, summary="recent actions and their state")
    async def actions_cmd(ctx: CommandContext, args: list[str]) -> str | Card:
        services = ctx.services
        tz = services.settings.tz
        within = ctx.visibility.only_conversation
        if ctx.visibility.sees_nothing:
            return "No actions here."
        if args and args[0] == "show":
            if len(args) != 2:
                raise UsageError()
            number = _number(args[1])
            async with services.db.read() as tx:
                action = await repo.get(tx, number) if number > 0 else None
                seen = action is not None and (within is None or action.conversation_id == within)
                asked_in = (
                    await conversations.get(tx, action.conversation_id)
                    if action is not None and action.conversation_id is not None
                    else None
                )
            if action is None or not seen:
                return f"No action #{args[1].removeprefix('#')}."
            return card_view(action, where_of(asked_in), tz, buttons=ctx.role is Role.OWNER)
        if args:
            raise UsageError()
        async with services.db.read() as tx:
            recent = await repo.recent(tx, within, RECENT)
        if not recent:
            return "No actions yet."
        return "\n".join(line(a, tz) for a in recent)
