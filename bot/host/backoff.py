"""The one backoff for work that fails: how long to wait before trying a unit again, and the
error as one bounded line (for the log, a row's `last_error`, /status)."""

from __future__ import annotations

ERROR_LINE_CHARS = 300


def backoff(failures: int, *, first: float, most: float) -> float:
    """Seconds to wait after the `failures`-th failure in a row (1 for the first): `first`,
    doubling each time, never more than `most`."""
    return min(most, first * 2 ** max(0, min(failures - 1, 64)))


def error_line(exc: BaseException, limit: int = ERROR_LINE_CHARS) -> str:
    """`Type: message` on one line, cut to `limit` characters."""
    return one_line(f"{type(exc).__name__}: {exc}", limit)


def one_line(text: str, limit: int) -> str:
    """`text` with its whitespace and line breaks made single spaces, cut to `limit`."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
