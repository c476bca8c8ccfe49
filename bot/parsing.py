"""Numbers, ids, refs and durations written by a person (a slash command) or a model (a tool
argument), read one way: ASCII digits only and bounded.

Why not `int()`: `str.isdigit()` is true for '²', which `int()` then refuses; `int()` reads
'٣' as 3 and '1_000' as 1000; and it reads any magnitude, which a database column, a
`timedelta` or a query parameter then refuses with an exception. Such an exception is not an
answer: it fails the turn, and the chat's inbox retries the same message. Here every bad value
is a `ValueError` whose text is the one line the person or model reads, and an id that no row
can have is simply absent (`parse_id` returns None)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field

MAX_ID = 2**63 - 1  # the largest BIGINT id; SQLite's INTEGER holds the same 64 bits
MAX_INT32 = 2**31 - 1  # an Integer column on PostgreSQL (a revision, a log line's seq)
MINUTE, HOUR, DAY = 60, 3600, 86_400

_DIGITS = re.compile(r"[0-9]+")
# ASCII: under Unicode case folding 's' also matches 'ſ' (long s), which no unit is.
_DURATION = re.compile(r"([0-9]+)\s*(s|m|min|h|d)?", re.IGNORECASE | re.ASCII)
_UNIT = {"s": 1, "m": MINUTE, "min": MINUTE, "h": HOUR, "d": DAY}

# A whole number a model passes to a tool (an offset, a limit, a revision): the tool's schema
# says its range, and a value outside it comes back to the model as an argument error. 32
# bits: a revision's column holds no more, and a schema's bound must read well as a double.
ToolCount = Annotated[int, Field(ge=0, le=MAX_INT32)]


class NotANumber(ValueError):
    """Not written as a whole number in ASCII digits."""


class OutOfRange(ValueError):
    """A whole number, but outside what the caller accepts."""


def parse_whole(text: str, *, most: int, least: int = 0, what: str = "a whole number") -> int:
    """ "42" → 42, for least <= 42 <= most. Surrounding spaces are allowed; a sign, '_', or
    any digit other than 0-9 is not."""
    written = text.strip()
    if not _DIGITS.fullmatch(written):
        raise NotANumber(f"{text!r} is not {what}")
    digits = written.lstrip("0") or "0"
    # Compared by length first: int() of thousands of digits is refused (and slow) anyway.
    if len(digits) > len(str(most)) or not least <= int(digits) <= most:
        raise OutOfRange(f"{written}: from {least} to {most}")
    return int(digits)


def parse_id(text: str, *, most: int = MAX_ID, what: str = "a number") -> int | None:
    """A stored row's id as written after a command ("12" or "#12") or inside a ref (rec-12):
    None when no row can have it (0, or past the column's range), so the caller answers that
    there is no such thing. NotANumber when it is not digits."""
    written = text.strip()
    if not _DIGITS.fullmatch(written.removeprefix("#")):
        raise NotANumber(f"{written!r} is not {what}")
    try:
        return parse_whole(written.removeprefix("#"), least=1, most=most)
    except OutOfRange:
        return None


def parse_duration(text: str, *, most: int, least: int = 0) -> int:
    """ "30m", "2h", "1d", "90" (seconds) → seconds, from `least` to `most`."""
    m = _DURATION.fullmatch(text.strip())
    if m is None:
        raise NotANumber(f"{text.strip()}: write a duration like 30m, 2h or 1d")
    unit = _UNIT[(m.group(2) or "s").lower()]
    try:
        seconds = parse_whole(m.group(1), most=most // unit) * unit
    except OutOfRange:
        raise OutOfRange(f"{text.strip()}: at most {spoken(most)}") from None
    if seconds < least:
        raise OutOfRange(f"{text.strip()}: at least {spoken(least)}")
    return seconds


def spoken(seconds: int) -> str:
    """3600 → "1 hour", 604800 → "7 days": the largest whole unit."""
    for size, name in ((DAY, "day"), (HOUR, "hour"), (MINUTE, "minute")):
        if seconds >= size and seconds % size == 0:
            n = seconds // size
            return f"{n} {name}{'s' if n != 1 else ''}"
    return f"{seconds} second{'s' if seconds != 1 else ''}"
