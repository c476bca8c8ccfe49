"""What every part of bot/actions/ shares about a ledger row: its wake-up topic, its
idempotency key, how it reads in one line."""

from __future__ import annotations

from datetime import datetime, tzinfo

from storage.models import Action
from storage.repos import actions as repo

ACTIONS_TOPIC = "actions"  # the action worker wakes on it (an approval, a permission)
KEY_PREFIX = "maka-action-"


def idempotency_key(action: Action) -> str:
    """Derived from the row, so every run of it (after a crash too) is the same request to
    the platform. Short: Feishu's `uuid` takes at most 50 characters."""
    return f"{KEY_PREFIX}{action.id}"


def line(action: Action, tz: tzinfo) -> str:
    """`#12 done: send a message to team: "hi" — asked by ou_x; approved by ou_owner 09:14;
    sent to team`"""
    parts = [f"#{action.id} {action.state}: {action.summary}", f"asked by {action.requester}"]
    if action.decided_by and action.decided_at:
        verb = "rejected" if action.state == repo.REJECTED else "approved"
        parts.append(f"{verb} by {action.decided_by} {when(action.decided_at, tz)}")
    elif action.state == repo.PROPOSED:
        parts.append(f"waits for the owner until {when(action.expires_at, tz)}")
    if action.result:
        parts.append(action.result)
    elif action.state == repo.FAILED and action.last_error:
        parts.append(action.last_error)
    return f"{parts[0]} — {'; '.join(parts[1:])}"


def when(at: datetime, tz: tzinfo) -> str:
    return at.astimezone(tz).strftime("%Y-%m-%d %H:%M")
