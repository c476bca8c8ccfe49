"""The pre-check before any model call: quiet hours, the daily token budget, the interval,
and whether anything is new since the last round. Pure: the heartbeat gathers the facts
(bot/discovery/heartbeat.py) and records what this decides, skips with their reason."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import Any

from bot.discovery.schedule import is_quiet
from storage.models import DiscoveryState

LABELS = {
    "records": "new messages or mail",
    "entries": "index entries changed",
    "notes": "new notebook notes",
    "feedback": "the owner reacted to a finding",
    "matters": "Matters due soon",
    "deadlines": "noted deadlines near",
    "soon": "calendar events or tasks coming up",
}
LOOKAHEAD = timedelta(hours=48)  # Matters, noted deadlines, events and due tasks this close


BUDGET_SPENT = "daily budget spent"  # a skip's reason starts so; its figures follow


@dataclass(frozen=True)
class Decision:
    run: bool
    reason: str


def whats_new(seen: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """The signals that moved since `seen` (a list signal moves when it has a new member)."""
    moved = []
    for key, value in now.items():
        before = seen.get(key)
        if isinstance(value, list):
            if set(value) - set(before or []):
                moved.append(key)
        elif value and value != before:
            moved.append(key)
    return moved


def decide(
    state: DiscoveryState,
    signals: dict[str, Any],
    *,
    now: datetime,
    tz: tzinfo,
    tokens_today: int,
) -> Decision:
    quiet = (state.quiet_from, state.quiet_to) if state.quiet_from is not None else None
    if not state.run_requested and is_quiet(quiet, now, tz):  # type: ignore[arg-type]
        return Decision(False, "quiet hours")
    if tokens_today >= state.budget_tokens:
        return Decision(False, f"{BUDGET_SPENT} ({tokens_today} of {state.budget_tokens} tokens)")
    if state.run_requested:
        return Decision(True, "asked for with /discovery run")
    moved = whats_new(state.watermark or {}, signals)
    if moved:
        return Decision(True, "new: " + ", ".join(LABELS[k] for k in moved))
    deep = timedelta(seconds=state.deep_every_seconds)
    if state.deep_every_seconds and (
        state.last_round_at is None or now - state.last_round_at >= deep
    ):
        return Decision(True, "a deep round is due")
    return Decision(False, "nothing new since the last round")
