"""Counting calls to a platform's API, per API and day (readable for /status)."""

from __future__ import annotations

import logging
from datetime import datetime, tzinfo

from prometheus_client import Counter

from storage.db import Database
from storage.repos import api_usage
from storage.repos.api_usage import UsageTotals
from storage.types import utcnow

log = logging.getLogger(__name__)
API_CALLS = Counter("maka_platform_api_calls_total", "Platform API calls", ["platform", "api"])


class ApiUsageCounter:
    def __init__(self, db: Database, platform: str, tz: tzinfo) -> None:
        self.db, self.platform, self.tz = db, platform, tz

    def _today(self, now: datetime | None = None) -> datetime:
        return (now or utcnow()).astimezone(self.tz)

    async def count(self, api: str) -> None:
        API_CALLS.labels(self.platform, api).inc()
        try:
            async with self.db.write() as tx:
                await api_usage.add(
                    tx, platform=self.platform, api=api, day=self._today().date(), calls=1
                )
        except Exception as exc:  # counting must never stop a message from going out
            log.warning("could not count %s call %s: %s", self.platform, api, exc)

    async def totals(self, now: datetime | None = None) -> UsageTotals:
        async with self.db.read() as tx:
            return await api_usage.totals(
                tx, platform=self.platform, today=self._today(now).date()
            )
