"""The claim loop both attachment workers share (fetch: a channel downloads; extract: the
text is read): take the due rows of one state, work each, and settle it in one transaction:
on to the next state, done (its record written), failed with one line, or backed off after a
transient failure and parked after PARK_AFTER (storage/repos/attachments.py). Every settling
wakes ATTACHMENTS_TOPIC, so a turn waiting for a message's files hears of it at once.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

from prometheus_client import Counter
from sqlalchemy.ext.asyncio import AsyncSession

from bot.attachments.records import Attached
from bot.host.backoff import backoff, one_line
from bot.host.memory import give_back_memory
from bot.host.notify import Notifier
from bot.host.workers import PoolWorker
from storage.db import Database
from storage.repos import attachments
from storage.types import utcnow

log = logging.getLogger(__name__)

CLAIM_LEASE = timedelta(minutes=5)  # a 30 MB download or a sandboxed extraction fits
IDLE_FLOOR = 0.2  # seconds: the shortest idle wait before a backed-off row is due
SETTLED = Counter(
    "maka_attachments_settled_total", "Attachment rows settled, by step and outcome",
    ["step", "outcome"],
)  # fmt: skip


class Lost(Exception):
    """The row is no longer ours (recalled, or another worker took it over): roll back."""


class AttachmentWorker(PoolWorker[Attached], ABC):
    topics = (attachments.ATTACHMENTS_TOPIC,)
    state: str  # the state this worker claims
    platform: str | None = None  # only this platform's rows, when set
    concurrency = 4
    # A transient failure waits this long, doubling per attempt (tests make it short).
    retry_first, retry_most = 5.0, 600.0

    def __init__(self, db: Database, notifier: Notifier, instance_id: str) -> None:
        self.db, self.notifier, self.owner = db, notifier, instance_id
        self._next_due: datetime | None = None

    async def claim(self, n: int) -> list[Attached]:
        now = utcnow()
        async with self.db.read() as tx:
            if not await attachments.has_due(tx, state=self.state, now=now, platform=self.platform):
                self._next_due = await attachments.next_due(tx, state=self.state)
                return []
        async with self.db.write_statement() as tx:
            rows = await attachments.claim_due(
                tx,
                state=self.state,
                owner=self.owner,
                now=now,
                limit=n,
                lease=CLAIM_LEASE,
                platform=self.platform,
            )
        return [Attached.of(row) for row in rows]

    async def idle_timeout(self, poll_interval: float) -> float:
        if self._next_due is None:
            return poll_interval
        until = (self._next_due - utcnow()).total_seconds()
        return max(IDLE_FLOOR, min(poll_interval, until))

    async def work(self, unit: Attached) -> None:
        try:
            await self.handle(unit)
        except Lost:
            log.info("attachment %s: no longer ours (recalled or taken over)", unit.id)
        except Exception as exc:  # a bug or an outage: backed off, never retried hot
            await self.retry_later(unit, f"{type(exc).__name__}: {exc}")
        finally:  # a file's bytes and text were briefly held: not for good
            give_back_memory()

    @abstractmethod
    async def handle(self, unit: Attached) -> None:
        """Work the row and settle it (`settle`, `fail`, `retry_later`)."""

    async def settle(
        self,
        outcome: str,
        write: Callable[[AsyncSession, datetime], Awaitable[bool]],
    ) -> None:
        """Run `write` (which moves the row) in one transaction, then wake the waiters."""
        async with self.db.write() as tx:
            now = utcnow()
            if not await write(tx, now):
                raise Lost
            await self.notifier.publish(tx, attachments.ATTACHMENTS_TOPIC)
        SETTLED.labels(self.state, outcome).inc()
        self.notifier.wake_local(attachments.ATTACHMENTS_TOPIC)

    async def fail(self, unit: Attached, error: str) -> None:
        """It cannot be read, for good: FAILED with the one line the turn shows."""
        line = one_line(error, attachments.ERROR_CHARS)
        log.info("attachment %s (%s) failed: %s", unit.id, unit.title, line)

        async def write(tx: AsyncSession, now: datetime) -> bool:
            return await attachments.move(
                tx, unit.id, self.owner, state=attachments.FAILED, now=now, error=line
            )

        await self.settle("failed", write)

    async def retry_later(self, unit: Attached, error: str) -> None:
        """A transient failure: tried again after the one backoff; parked after PARK_AFTER."""
        line = one_line(error, 300)

        def retry_in(attempts: int) -> timedelta:
            return timedelta(
                seconds=backoff(attempts, first=self.retry_first, most=self.retry_most)
            )

        async with self.db.write() as tx:
            parked = await attachments.record_failure(
                tx, unit.id, self.owner, error=line, now=utcnow(), retry_in=retry_in
            )
            if parked:
                await self.notifier.publish(tx, attachments.ATTACHMENTS_TOPIC)
        if parked:
            log.warning("attachment %s (%s) parked: %s", unit.id, unit.title, line)
            SETTLED.labels(self.state, "parked").inc()
            self.notifier.wake_local(attachments.ATTACHMENTS_TOPIC)
        else:
            log.info("attachment %s (%s) will be tried again: %s", unit.id, unit.title, line)
            SETTLED.labels(self.state, "retried").inc()
