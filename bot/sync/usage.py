"""Counting the sync's Feishu calls without a transaction per call.

`ApiUsageCounter` (the channel's) writes one row update per call, which is right for sends but
not for a history sync that makes hundreds of calls a minute: every replica's calls would
queue on the same `api_usage` row. Here each call is counted in /metrics at once and in
`api_usage` within a second, in one transaction for all calls since the last write (and on
close). A crash can lose at most that second of counts.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from datetime import tzinfo

from bot.channels.api_usage import API_CALLS
from storage.db import Database
from storage.repos import api_usage
from storage.types import utcnow

log = logging.getLogger(__name__)


class BatchedUsageCounter:
    def __init__(self, db: Database, platform: str, tz: tzinfo, *, interval: float = 1.0) -> None:
        self.db, self.platform, self.tz = db, platform, tz
        self.interval = interval
        self._pending: Counter[str] = Counter()
        self._flusher: asyncio.Task[None] | None = None

    async def count(self, api: str) -> None:
        API_CALLS.labels(self.platform, api).inc()
        self._pending[api] += 1
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush_later(), name="usage-flush")

    async def _flush_later(self) -> None:
        await asyncio.sleep(self.interval)
        await self.flush()

    async def flush(self) -> None:
        pending, self._pending = self._pending, Counter()
        if not pending:
            return
        day = utcnow().astimezone(self.tz).date()
        try:
            async with self.db.write() as tx:
                for api, calls in sorted(pending.items()):
                    await api_usage.add(
                        tx, platform=self.platform, api=api, day=day, calls=calls
                    )
        except Exception as exc:  # counting never stops a sync
            log.warning("could not count %s calls %s: %s", self.platform, dict(pending), exc)

    async def aclose(self) -> None:
        if self._flusher is not None and not self._flusher.done():
            self._flusher.cancel()
        await self.flush()
