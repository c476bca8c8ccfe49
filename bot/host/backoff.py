"""The one backoff for work that fails: how long to wait before trying a unit again, and the
error as one bounded line (for the log, a row's `last_error`, /status), logged as one line."""

from __future__ import annotations

import logging
import traceback

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


def origin(exc: BaseException) -> str:
    """Where `exc` was raised, as `path:line in function`: the innermost frame of this
    project's code (not a library's), else the innermost of all."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if not any(lib in f.filename for lib in _LIBRARIES)]
    if not frames:
        return "unknown"
    frame = (ours or frames)[-1]
    path = frame.filename
    for root in _PROJECT_ROOTS:
        if root in path:
            path = path[path.rindex(root) + 1 :]
            break
    return f"{path}:{frame.lineno} in {frame.name}"


_PROJECT_ROOTS = ("/bot/", "/storage/", "/sources/", "/tests/")
_LIBRARIES = ("site-packages", "/lib/python")


def log_failure(logger: logging.Logger, what: str, exc: BaseException) -> None:
    """A failure in the log as one line (the error, and where it was raised); its traceback
    only at DEBUG. Work that fails again and again, backed off, adds a line each time, not
    a page."""
    logger.warning("%s: %s (at %s)", what, error_line(exc), origin(exc))
    logger.debug("%s: the traceback", what, exc_info=exc)
