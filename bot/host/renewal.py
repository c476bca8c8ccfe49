"""Keeping a lease alive while its work is in hand.

A lease is sized short (seconds) and renewed every third of its length while the work runs,
so work that ends badly (an error, a cancelled task, a database that went away mid-unit)
frees its lease within seconds and someone else takes the work over; a process that dies
is covered by the Host's liveness lease (`storage.claims`). A renewal that fails is logged
and tried again on the next beat: it never ends the work, and it never leaves anything
behind when the work ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta

log = logging.getLogger(__name__)


@contextlib.asynccontextmanager
async def renewed(
    renew: Callable[[], Awaitable[bool]], ttl: timedelta, what: str
) -> AsyncIterator[None]:
    """Run the body while `renew()` is called every third of `ttl`; `renew` returns False
    when the lease was lost (then the body's own owner-checked writes will be refused)."""

    async def beat() -> None:
        while True:
            await asyncio.sleep(ttl.total_seconds() / 3)
            try:
                if not await renew():
                    log.error("lost the lease of %s while working on it", what)
            except Exception as exc:
                log.warning("could not renew the lease of %s: %s", what, exc)

    task = asyncio.create_task(beat(), name=f"renew {what}")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
