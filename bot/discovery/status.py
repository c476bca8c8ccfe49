"""`/discovery status`: the heartbeat's settings, the last and next round, recent skips with
their reasons, tokens used today against the budget, and how many notes and findings there
are (counts only: the notebook's content is the owner's and is never shown in a chat).

Tokens used are usage figures: shown only where `usage` (the visibility rule's
`sees_usage`: the owner's DM); elsewhere the line says where to look, and a skip for a spent
budget gives no figures."""

from __future__ import annotations

from datetime import datetime, tzinfo

from bot.assistant.visibility import USAGE_ELSEWHERE
from bot.discovery.delivery import settle_deliveries
from bot.discovery.passes import PURPOSES
from bot.discovery.precheck import BUDGET_SPENT
from bot.discovery.schedule import start_of_day
from storage.db import Database
from storage.models import DiscoveryRound, DiscoveryState
from storage.repos import discovery as repo
from storage.repos import model_calls

SKIPS_SHOWN = 5


async def discovery_status(
    db: Database, state: DiscoveryState, tz: tzinfo, now: datetime, *, usage: bool
) -> str:
    await settle_deliveries(db)  # the counts say what was sent, as of now
    async with db.read() as tx:
        rounds = await repo.recent_rounds(tx, ("done", "failed", "discovery", "judgement"), 1)
        skips = await repo.recent_rounds(tx, ("skipped",), SKIPS_SHOWN)
        used = await model_calls.tokens_since(tx, start_of_day(now, tz), PURPOSES)
        counts = await repo.counts(tx)
    quiet = (
        f"quiet {state.quiet_from}-{state.quiet_to}"
        if state.quiet_from is not None
        else "no quiet hours"
    )
    lines = [
        f"Discovery: {'on' if state.enabled else 'off (/discovery on to start)'}, every "
        f"{state.interval_seconds // 60} min, {quiet}, budget {state.budget_tokens} tokens a day",
        f"Last round: {_round(rounds[0] if rounds else None, tz)}",
        f"Next round: {_next(state, tz)}",
        _tokens(used, state.budget_tokens) if usage else f"Tokens today: {USAGE_ELSEWHERE}",
    ]
    if skips:
        lines.append(
            "Recent skips: "
            + "; ".join(f"{_when(r.started_at, tz)} {_reason(r.reason, usage)}" for r in skips)
        )
    f = counts.findings
    lines.append(
        f"Notebook: {counts.notes} notes. Findings: {f.get('delivered', 0)} delivered, "
        f"{f.get('queued', 0)} queued for the Bot, {f.get('unsent', 0)} not sent, "
        f"{f.get('repeat', 0)} repeats dropped, {f.get('undelivered', 0)} waiting for a DM "
        f"with the owner; {counts.feedback} with feedback"
    )
    return "\n".join(lines)


def _tokens(used: int, budget: int) -> str:
    spent = " (spent: rounds wait for tomorrow, or raise /discovery budget)"
    return f"Tokens today: {used} of {budget}" + (spent if used >= budget else "")


def _reason(reason: str, usage: bool) -> str:
    """A skip's reason, without its token figures where usage is not shown."""
    return BUDGET_SPENT if not usage and reason.startswith(BUDGET_SPENT) else reason


def _round(r: DiscoveryRound | None, tz: tzinfo) -> str:
    if r is None:
        return "none yet"
    text = f"{_when(r.started_at, tz)}, {r.phase} ({r.reason})"
    if r.phase == "done":
        return f"{text}: {r.findings} findings passed to the Bot"
    if r.phase == "failed":
        return f"{text}; it runs again at the next beat (is the model reachable?)"
    return f"{text}: in progress, or resumed at the next beat"


def _next(state: DiscoveryState, tz: tzinfo) -> str:
    if state.run_requested:
        return "now (asked for)"
    if not state.enabled:
        return "none: discovery is off"
    return _when(state.next_round_at, tz) if state.next_round_at else "at the next beat"


def _when(at: datetime | None, tz: tzinfo) -> str:
    return at.astimezone(tz).strftime("%Y-%m-%d %H:%M") if at else "never"
