"""The heartbeat's calendar: quiet hours in the owner's time zone, durations as people write
them, and the owner's day (for the daily token budget). Pure functions, no I/O. (Parsing
quiet hours lives in `bot.config`, which must not import this package.)"""

from __future__ import annotations

import re
from datetime import datetime, tzinfo

_DURATION = re.compile(r"^\s*(\d+)\s*(s|m|min|h|d)?\s*$", re.IGNORECASE)
_UNIT = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86_400}


def parse_duration(text: str) -> int:
    """ "30m", "2h", "1d", "90" (seconds) → seconds."""
    m = _DURATION.match(text)
    if m is None:
        raise ValueError(f"{text!r}: write a duration like 30m, 2h or 1d")
    return int(m.group(1)) * _UNIT[(m.group(2) or "s").lower()]


def is_quiet(quiet: tuple[int, int] | None, now: datetime, tz: tzinfo) -> bool:
    if quiet is None:
        return False
    hour, (start, end) = now.astimezone(tz).hour, quiet
    return start <= hour < end if start < end else hour >= start or hour < end


def start_of_day(now: datetime, tz: tzinfo) -> datetime:
    """Midnight of the owner's day: the daily budget counts from here."""
    return now.astimezone(tz).replace(hour=0, minute=0, second=0, microsecond=0)
