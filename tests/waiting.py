"""Waiting for something to become true, without timing assertions."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


async def wait_until(
    predicate: Callable[[], Awaitable[bool]], timeout: float = 20.0, interval: float = 0.02
) -> None:
    async with asyncio.timeout(timeout):
        while not await predicate():
            await asyncio.sleep(interval)
