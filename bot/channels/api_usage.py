"""Counting calls to a platform's API, per API and day (free Feishu tenants have a monthly
quota; /status and the status page read it).

Each call is counted in /metrics at once and in `api_usage` within `interval`, in one
transaction for all calls since the last write (and on close): a transaction per call would
make every reply and every history page queue on the same `api_usage` row (a busy process
spent one write of its ten per reply here). A crash loses at most that second of counts.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter as Tally
from datetime import datetime, tzinfo

from prometheus_client import Counter

from storage.db import Database
from storage.repos import api_usage
from storage.repos.api_usage import UsageTotals
from storage.types import utcnow

log = logging.getLogger(__name__)
API_CALLS = Counter("maka_platform_api_calls_total", "Platform API calls", ["platform", "api"])


class ApiUsageCounter:
    def __init__(self, db: Database, platform: str, tz: tzinfo, *, interval: float = 1.0) -> None:
        self.db, self.platform, self.tz = db, platform, tz
        self.interval = interval
        self._pending: Tally[str] = Tally()
        self._flusher: asyncio.Task[None] | None = None

    def _today(self, now: datetime | None = None) -> datetime:
        return (now or utcnow()).astimezone(self.tz)

    async def count(self, api: str) -> None:
        API_CALLS.labels(self.platform, api).inc()
        self._pending[api] += 1
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush_later(), name="usage-flush")

    async def _flush_later(self) -> None:
        await asyncio.sleep(self.interval)
        await self.flush()

    async def flush(self) -> None:
        pending, self._pending = self._pending, Tally()
        if not pending:
            return
        day = self._today().date()
        try:
            async with self.db.write() as tx:
                for api, calls in sorted(pending.items()):
                    await api_usage.add(tx, platform=self.platform, api=api, day=day, calls=calls)
        except Exception as exc:  # counting must never stop a message or a sync
            log.warning("could not count %s calls %s: %s", self.platform, dict(pending), exc)

    async def totals(self, now: datetime | None = None) -> UsageTotals:
        """What is stored (calls of the last `interval` may not be yet: `flush` first)."""
        async with self.db.read() as tx:
            return await api_usage.totals(tx, platform=self.platform, today=self._today(now).date())

    async def aclose(self) -> None:
        if self._flusher is not None and not self._flusher.done():
            self._flusher.cancel()
        await self.flush()
