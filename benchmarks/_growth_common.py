"""What every growth figure shares: the history's shape and how one operation is timed."""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

SESSIONS = 10_000
CHATS = 200
REPEATS = 15
NOW = datetime(2026, 12, 6, tzinfo=UTC)


async def median_ms(run: Callable[[], Awaitable[Any]]) -> float:
    await run()  # warm
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        await run()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)
