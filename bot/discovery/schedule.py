"""The heartbeat's calendar: quiet hours in the owner's time zone and the owner's day (for the
daily token budget). Pure functions, no I/O. (Parsing quiet hours lives in `bot.config`,
which must not import this package; durations as people write them in `bot.parsing`.)"""

from __future__ import annotations

from datetime import datetime, tzinfo


def is_quiet(quiet: tuple[int, int] | None, now: datetime, tz: tzinfo) -> bool:
    if quiet is None:
        return False
    hour, (start, end) = now.astimezone(tz).hour, quiet
    return start <= hour < end if start < end else hour >= start or hour < end


def start_of_day(now: datetime, tz: tzinfo) -> datetime:
    """Midnight of the owner's day: the daily budget counts from here."""
    return now.astimezone(tz).replace(hour=0, minute=0, second=0, microsecond=0)
