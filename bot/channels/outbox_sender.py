"""The claim loop every channel's sender shares: take a due outbox row of its platform under a
short lease, keep the lease renewed while the delivery runs, hand a snapshot of the row to
the channel's `deliver`. How a row is delivered and settled is the channel's business. It is
a Host pool: deliveries mostly wait for the platform, so several run side by side.

A delivery that raises what the channel did not expect (a bug, a reply nothing parses) is
settled here: tried again after a growing backoff, up to `MAX_CLAIMS` deliveries, then given
up as uncertain (it may have gone out). Before, its row was free again once its lease lapsed
and was claimed again and again, with nothing recorded."""

from __future__ import annotations

import functools
import logging
from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.host.backoff import backoff, error_line, log_failure
from bot.host.renewal import renewed
from bot.host.workers import PoolWorker
from storage import claims
from storage.db import Database
from storage.models import OutboxMessage
from storage.repos import outbox
from storage.types import utcnow

# Renewed while a delivery runs (rate-limit waits and retries can take minutes), so a
# delivery that ends badly frees its row within seconds.
CLAIM_LEASE = timedelta(seconds=15)
MAX_CLAIMS = 8  # deliveries of one row before it is given up
RETRY_FIRST, RETRY_MOST = 5.0, 600.0  # seconds before a row whose delivery failed is tried again
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Claimed:
    """A claimed outbox row as it was when claimed (the transaction that read it is over)."""

    id: int
    key: str
    chat_id: str
    conversation_id: int | None
    reply_to: str | None
    in_thread: bool
    content_type: str
    content: dict[str, object]
    created_at: datetime
    claims: int  # deliveries begun, this one included

    @classmethod
    def of(cls, row: OutboxMessage) -> Claimed:
        return cls(
            row.id,
            row.idempotency_key,
            row.chat_id,
            row.conversation_id,
            row.reply_to,
            row.in_thread,
            row.content_type,
            dict(row.content),
            row.created_at,
            row.attempts,
        )


class OutboxSender(PoolWorker[Claimed], ABC):
    topics = (outbox.OUTBOX_TOPIC,)
    platform: str

    def __init__(self, db: Database, instance_id: str, lease: timedelta | None = None) -> None:
        self.db, self.instance_id = db, instance_id
        self.lease = lease or CLAIM_LEASE
        self._found_last = False  # the last claim filled its slots: more are likely due

    async def claim(self, n: int) -> list[Claimed]:
        """Up to `n` due rows (one per chat: `outbox._DUE`), claimed. An idle poll only
        reads; while rows keep coming the read first is skipped (it would find one, then the
        claim writes anyway)."""
        if not self._found_last:
            async with self.db.read() as tx:
                if not await outbox.has_due(tx, platform=self.platform, now=utcnow()):
                    return []
        async with self.db.write_statement() as tx:
            rows = await outbox.claim_due(
                tx,
                platform=self.platform,
                owner=self.instance_id,
                now=utcnow(),
                limit=n,
                lease=self.lease,
            )
        # Every slot filled: more are likely due, so the next claim goes straight to the
        # write. Fewer: nothing else was due, and the next claim (a freed slot, a wake-up)
        # reads first, as an idle poll does, instead of taking the write lock to find nothing.
        self._found_last = len(rows) >= n
        return [Claimed.of(row) for row in rows]

    async def work(self, row: Claimed) -> None:
        renew = functools.partial(self._renew, row.id)
        async with renewed(renew, self.lease, f"outbox row {row.id}"):
            try:
                await self.deliver(row)
            except Exception as exc:
                log_failure(log, f"outbox {row.id}: delivery raised", exc)
                if row.claims < MAX_CLAIMS:
                    await self._retry_later(row, error_line(exc))
                else:
                    await self._give_up(row, error_line(exc))

    @abstractmethod
    async def deliver(self, row: Claimed) -> None:
        """Deliver the row and settle it (`outbox.finish` / `retry_later`, owner-checked)."""

    async def _retry_later(self, row: Claimed, error: str) -> None:
        delay = backoff(row.claims, first=RETRY_FIRST, most=RETRY_MOST)
        log.warning("outbox %s: will retry in %.0fs: %s", row.id, delay, error)
        async with self.db.write() as tx:
            await outbox.retry_later(
                tx, row.id, self.instance_id, at=utcnow() + timedelta(seconds=delay), error=error
            )

    async def _give_up(self, row: Claimed, error: str) -> None:
        """Settle a row tried `MAX_CLAIMS` times as uncertain (it may have gone out)."""
        log.error("outbox %s to chat %s is uncertain: %s", row.id, row.chat_id, error)
        async with self.db.write() as tx:
            await outbox.finish(
                tx, row.id, self.instance_id, state=outbox.UNCERTAIN, now=utcnow(), error=error
            )

    async def _renew(self, row_id: int) -> bool:
        async with self.db.write() as tx:
            held = await claims.renew_rows(
                tx, OutboxMessage, self.instance_id, [row_id], lease=self.lease, now=utcnow()
            )
        return bool(held)
