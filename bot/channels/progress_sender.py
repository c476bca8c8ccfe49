"""The claim loop every channel's progress-card worker shares: take the cards of its platform
that have something to push (`progress_cards.next_attempt_at` due), under a short lease
kept renewed while the push runs, and hand a snapshot to the channel's `push`, which settles
it. A push that fails is tried again after the one backoff, up to MAX_FAILURES, then given
up visibly (logged, counted, `gave_up_at`): a card degrades to nothing, and the answer,
which is the outbox's business, is never touched.

The same loop sweeps, now and then, the cards left working by a turn or Matter that is gone
(`progress_cards.sweep`), so no card stays "working" for ever.
"""

from __future__ import annotations

import functools
import logging
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from prometheus_client import Counter

from bot.host.backoff import backoff, error_line, log_failure
from bot.host.notify import Notifier
from bot.host.renewal import renewed
from bot.host.workers import PoolWorker
from storage import claims
from storage.db import Database
from storage.models import ProgressCard
from storage.repos import progress_cards
from storage.types import utcnow

CLAIM_LEASE = timedelta(seconds=15)
MAX_FAILURES = 5  # pushes of one card failed in a row before it is given up
RETRY_FIRST, RETRY_MOST = 2.0, 120.0
SWEEP_EVERY = 30.0  # seconds between sweeps of one worker
IDLE_FLOOR = 0.2  # seconds: the shortest idle wait for a throttled card
log = logging.getLogger(__name__)
CARDS = Counter(
    "maka_progress_card_pushes_total", "Progress card pushes settled", ["platform", "outcome"]
)


@dataclass(frozen=True)
class ClaimedCard:
    """A claimed card as it was when claimed."""

    id: int
    key: str
    chat_id: str
    reply_to: str | None
    title: str
    steps: list[str]
    status: str
    version: int
    card_id: str | None
    message_id: str | None
    sequence: int
    streaming_closed: bool
    streaming_since: datetime | None
    failures: int

    @classmethod
    def of(cls, row: ProgressCard) -> ClaimedCard:
        return cls(
            row.id,
            row.key,
            row.chat_id,
            row.reply_to,
            row.title,
            list(row.steps),
            row.status,
            row.version,
            row.card_id,
            row.message_id,
            row.sequence,
            row.streaming_closed,
            row.streaming_since,
            row.failures,
        )

    @property
    def final(self) -> bool:
        return self.status in progress_cards.FINAL


class ProgressSender(PoolWorker[ClaimedCard], ABC):
    topics = (progress_cards.PROGRESS_TOPIC,)
    platform: str
    concurrency = 8

    def __init__(self, db: Database, notifier: Notifier, instance_id: str) -> None:
        self.db, self.notifier, self.instance_id = db, notifier, instance_id
        self.lease = CLAIM_LEASE
        self._next_due: datetime | None = None
        self._last_sweep = 0.0

    async def claim(self, n: int) -> list[ClaimedCard]:
        now = utcnow()
        if time.monotonic() - self._last_sweep >= SWEEP_EVERY:
            self._last_sweep = time.monotonic()
            await self.sweep(now)
        async with self.db.read() as tx:
            if not await progress_cards.has_due(tx, platform=self.platform, now=now):
                self._next_due = await progress_cards.next_due(tx, platform=self.platform)
                return []
        async with self.db.write_statement() as tx:
            rows = await progress_cards.claim_due(
                tx,
                platform=self.platform,
                owner=self.instance_id,
                now=now,
                limit=n,
                lease=self.lease,
            )
        return [ClaimedCard.of(row) for row in rows]

    async def sweep(self, now: datetime) -> list[str]:
        """Finalize the cards whose turn or Matter is gone (see `progress_cards.sweep`)."""
        async with self.db.write() as tx:
            keys = await progress_cards.sweep(tx, now)
        if keys:
            log.warning("progress cards left working, finalized as interrupted: %s", keys)
            self.notifier.wake_local(progress_cards.PROGRESS_TOPIC)
        return keys

    async def idle_timeout(self, poll_interval: float) -> float:
        """Until the next card is due (a throttled push), if that is sooner than the poll."""
        if self._next_due is None:
            return poll_interval
        # Not below IDLE_FLOOR: a card due but claimed (by us, pushing; by another replica)
        # would otherwise make this a busy loop.
        until = (self._next_due - utcnow()).total_seconds()
        return max(IDLE_FLOOR, min(poll_interval, until))

    async def work(self, card: ClaimedCard) -> None:
        renew = functools.partial(self._renew, card.id)
        async with renewed(renew, self.lease, f"progress card {card.id}"):
            try:
                await self.push(card)
            except Exception as exc:
                log_failure(log, f"progress card {card.key}: push raised", exc)
                await self.failed(card, error_line(exc))

    @abstractmethod
    async def push(self, card: ClaimedCard) -> None:
        """Show the card's desired state on the platform and settle it (`pushed`,
        `failed`, `give_up`)."""

    async def record(self, card: ClaimedCard, **pushed: Any) -> None:
        """What a push made so far (a card, a message), kept before it goes on."""
        async with self.db.write() as tx:
            await progress_cards.record(tx, card.id, self.instance_id, **pushed)

    async def pushed(self, card: ClaimedCard, **pushed: Any) -> None:
        CARDS.labels(self.platform, "pushed").inc()
        async with self.db.write() as tx:
            held = await progress_cards.settle(
                tx, card.id, self.instance_id, version=card.version, now=utcnow(), **pushed
            )
        if not held:
            log.warning("progress card %s: claim lost before settling", card.key)

    async def failed(self, card: ClaimedCard, error: str, **pushed: Any) -> None:
        """Tried again after the one backoff, or given up after MAX_FAILURES."""
        failures = card.failures + 1
        if failures >= MAX_FAILURES:
            await self.give_up(card, error)
            return
        delay = backoff(failures, first=RETRY_FIRST, most=RETRY_MOST)
        log.warning("progress card %s: will retry in %.0fs: %s", card.key, delay, error)
        CARDS.labels(self.platform, "retried").inc()
        async with self.db.write() as tx:
            await progress_cards.retry_later(
                tx,
                card.id,
                self.instance_id,
                at=utcnow() + timedelta(seconds=delay),
                error=error,
                **pushed,
            )

    async def again(self, card: ClaimedCard, error: str, **pushed: Any) -> None:
        """Pushed again at once, with what `pushed` corrects (not counted as a failure of
        the platform: the card's own state was out of step)."""
        log.info("progress card %s: pushing again: %s", card.key, error)
        async with self.db.write() as tx:
            await progress_cards.retry_later(
                tx, card.id, self.instance_id, at=utcnow(), error=error, **pushed
            )

    async def give_up(self, card: ClaimedCard, error: str) -> None:
        log.error("progress card %s in chat %s given up: %s", card.key, card.chat_id, error)
        CARDS.labels(self.platform, "given_up").inc()
        async with self.db.write() as tx:
            await progress_cards.give_up(tx, card.id, self.instance_id, now=utcnow(), error=error)

    async def _renew(self, card_id: int) -> bool:
        async with self.db.write() as tx:
            held = await claims.renew_rows(
                tx, ProgressCard, self.instance_id, [card_id], lease=self.lease, now=utcnow()
            )
        return bool(held)
