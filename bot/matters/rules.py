"""The settle rules (invariant 10, docs/design.md), as plain functions of the Matter and the
request."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

MAX_WAIT = timedelta(days=365)


class Disposition(StrEnum):
    CONTINUE = "continue"
    WAIT = "wait"
    COMPLETE = "complete"


class SettleRefused(Exception):
    """The settle cannot take effect; the message tells the agent what to do instead."""


@dataclass(frozen=True)
class SettleRequest:
    expected_revision: int
    disposition: Disposition
    reason: str
    summary: str
    wakes: tuple[datetime, ...] = field(default=())
    waiting_for: str | None = None
    target: dict[str, Any] | None = None  # the owner's event or task (bot/matters/waits.py)

    def fingerprint(self) -> str:
        blob = json.dumps(
            [
                self.expected_revision,
                self.disposition.value,
                self.reason,
                self.summary,
                [w.isoformat() for w in self.wakes],
                self.waiting_for,
                *([self.target] if self.target else []),  # earlier settles keep their print
            ],
            ensure_ascii=False,
        )
        return hashlib.sha256(blob.encode()).hexdigest()


def operation_id(matter_id: int, expected_revision: int) -> str:
    """A settle is the Matter's move from one revision: retrying it is the same operation."""
    return f"matter:{matter_id}:rev:{expected_revision}"


def check(
    request: SettleRequest, *, revision: int, status: str, unread: int, now: datetime
) -> None:
    if status in ("cancelled", "paused"):
        raise SettleRefused(f"the Matter is {status}; it cannot be settled now")
    if request.expected_revision != revision:
        raise SettleRefused(
            f"stale revision: you expected {request.expected_revision}, it is {revision}; "
            "read the matter again"
        )
    if request.disposition is Disposition.WAIT:
        if not request.wakes and not request.target:
            raise SettleRefused("wait needs at least one wake time or a target")
        if any(w.tzinfo is None for w in request.wakes):
            raise SettleRefused("wake times need a time zone (e.g. 2026-12-01T09:00:00+08:00)")
        if request.wakes and min(request.wakes) <= now:
            raise SettleRefused("wait needs a wake in the future")
        if request.wakes and max(request.wakes) > now + MAX_WAIT:
            raise SettleRefused("a wake must be within a year")
    if request.disposition is Disposition.COMPLETE and unread:
        raise SettleRefused(
            f"complete refused: {unread} unread event(s); read them with events_read first"
        )
