"""`/discovery on | off | every DURATION | quiet HH-HH|off | budget TOKENS | run | status`
(owner and admins). The Host owns the heartbeat: these change its row, never a model."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from bot.assistant.commands import CommandContext, CommandRegistry, UsageError
from bot.config import DISCOVERY_MAX_BUDGET, DISCOVERY_MAX_INTERVAL, parse_quiet_hours
from bot.discovery.heartbeat import TOPIC
from bot.discovery.status import discovery_status
from bot.parsing import MINUTE, NotANumber, parse_duration, parse_whole
from bot.services import Services
from storage.models import DiscoveryState
from storage.repos import discovery as repo
from storage.types import utcnow

USAGE = "/discovery on | off | every DURATION | quiet HH-HH|off | budget TOKENS | run | status"
MIN_INTERVAL = 5 * MINUTE
T = TypeVar("T")


def defaults_of(services: Services) -> repo.Defaults:
    settings = services.settings
    return repo.Defaults(
        enabled=settings.discovery_enabled,
        interval_seconds=int(settings.discovery_interval),
        quiet=parse_quiet_hours(settings.discovery_quiet),
        budget_tokens=settings.discovery_budget,
        deep_every_seconds=int(settings.discovery_deep_every),
    )


def register_discovery_commands(registry: CommandRegistry) -> None:
    @registry.command(
        "discovery", usage=USAGE, summary="proactive discovery: heartbeat and status", admin=True
    )
    async def discovery_cmd(ctx: CommandContext, args: list[str]) -> str:
        if not args:
            raise UsageError()
        action, rest = args[0], args[1:]
        arity = {"on": 0, "off": 0, "run": 0, "status": 0, "every": 1, "quiet": 1, "budget": 1}
        if arity.get(action) != len(rest):
            raise UsageError()
        services = ctx.services
        now = utcnow()
        if action == "status":  # a read: the defaults stand in until the owner changes one
            async with services.db.read() as tx:
                state = await repo.get_state(tx) or repo.state_of(defaults_of(services), now)
            return await discovery_status(
                services.db, state, services.settings.tz, now, usage=ctx.visibility.sees_usage
            )
        async with services.db.write() as tx:
            state = await repo.ensure_state(tx, defaults_of(services), now)
            answer = _change(state, action, rest[0] if rest else "")
            state.updated_at = now
        await services.notifier.notify(TOPIC)
        return answer


def _change(state: DiscoveryState, action: str, arg: str) -> str:
    if action in ("on", "off"):
        state.enabled = action == "on"
        state.next_round_at = None  # the first beat comes now
        return f"Discovery is {action}."
    if action == "run":
        state.run_requested = True
        return "A discovery round starts shortly (even in quiet hours; the daily budget holds)."
    if action == "every":
        try:
            seconds = parse_duration(arg, least=MIN_INTERVAL, most=DISCOVERY_MAX_INTERVAL)
        except ValueError as exc:
            raise UsageError(f"every {exc}") from None
        state.interval_seconds, state.next_round_at = seconds, None
        return f"Discovery beats every {seconds // 60} min."
    if action == "quiet":
        quiet = _parse(parse_quiet_hours, arg)
        state.quiet_from, state.quiet_to = quiet or (None, None)
        return f"Quiet hours: {arg}." if quiet else "No quiet hours."
    try:
        state.budget_tokens = parse_whole(arg, most=DISCOVERY_MAX_BUDGET)
    except NotANumber:
        raise UsageError(f"budget {arg}: a whole number of tokens a day, e.g. 50000") from None
    except ValueError:
        raise UsageError(f"budget {arg}: at most {DISCOVERY_MAX_BUDGET} tokens a day") from None
    return f"Discovery may use {state.budget_tokens} tokens a day."


def _parse(parse: Callable[[str], T], arg: str) -> T:
    try:
        return parse(arg)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
