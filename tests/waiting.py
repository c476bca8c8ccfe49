"""Waiting for something to become true, without timing assertions: every wait has a
deadline, and running out of it fails with a message that names what was awaited."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


async def wait_until(
    predicate: Callable[[], Awaitable[bool]],
    timeout: float = 20.0,
    interval: float = 0.02,
    *,
    what: str | None = None,
) -> None:
    try:
        async with asyncio.timeout(timeout):
            while not await predicate():
                await asyncio.sleep(interval)
    except TimeoutError:
        described = what or getattr(predicate, "__qualname__", repr(predicate))
        raise AssertionError(
            f"waited {timeout:.0f}s for {described}; it never became true"
        ) from None
