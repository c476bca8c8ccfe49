"""Retention: handled inbox items and inbound events, settled outbox rows, model calls and
operations older than their setting are pruned, in small batches, by one replica at a time.

What is never pruned here: what waits (an undelivered inbox item, a pending or uncertain
outbox row), synced source records, Session logs, the actions ledger, and everything else
kept "until forgotten". Inbound events are how a redelivered Feishu event is known as a
duplicate, so they (and the inbox items, whose dedupe keys also block a recalled message)
are kept at least DEDUPE_DAYS whatever is set (the setting refuses less, bot/config.py).

One pass holds the lease `retention` (storage.repos.leases), renewed in every batch's own
transaction, so two replicas never prune at once and a dead pruner's lease frees with its
Host. Each pass ends by recording what it removed and the table sizes (`retention_state`):
the status page reads that row instead of counting tables.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot.config import DEDUPE_DAYS, Settings
from bot.host.backoff import error_line
from bot.host.workers import Worker
from storage.db import Database
from storage.repos import leases
from storage.repos import retention as repo
from storage.types import utcnow

log = logging.getLogger(__name__)

LEASE = "retention"
LEASE_TTL = timedelta(minutes=5)
BATCH = 500  # rows per transaction: a short write lock, whatever the backlog
FIRST_DELAY = timedelta(minutes=1)  # not in the start-up's rush of writes


@dataclass(frozen=True)
class RetentionPolicy:
    """Days kept per pruned table (repo names); 0 or absent keeps forever."""

    days: dict[str, int]
    interval: timedelta = timedelta(hours=1)

    @classmethod
    def from_settings(cls, settings: Settings) -> RetentionPolicy:
        inbox = settings.retention_inbox_days
        return cls(
            days={
                repo.INBOUND_EVENTS.name: inbox,
                repo.INBOX_ITEMS.name: inbox,
                repo.OUTBOX.name: settings.retention_outbox_days,
                repo.MODEL_CALLS.name: settings.retention_model_calls_days,
                repo.OPERATIONS.name: settings.retention_operations_days,
            },
            interval=timedelta(seconds=settings.retention_interval),
        )

    def cutoff(self, table: repo.PrunedTable, now: datetime) -> datetime | None:
        days = self.days.get(table.name, 0)
        if days <= 0:
            return None
        if table.dedupe:
            days = max(days, DEDUPE_DAYS)  # also for a policy built by hand
        return now - timedelta(days=days)


@dataclass
class PruneReport:
    started_at: datetime
    deleted: dict[str, int] = field(default_factory=dict)  # or, in a dry run, would delete
    sizes: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    ran: bool = True  # False: another replica holds the lease


class Pruner:
    def __init__(
        self, db: Database, policy: RetentionPolicy, owner: str, *, batch: int = BATCH
    ) -> None:
        self.db, self.policy, self.owner, self.batch = db, policy, owner, batch

    async def prune(self, *, dry_run: bool = False) -> PruneReport:
        """One pass over every table now. A failing table is reported and the others go on;
        a dry run counts what would go and records nothing."""
        report = PruneReport(started_at=utcnow())
        if dry_run:
            async with self.db.read() as tx:
                for table in repo.PRUNED_TABLES:
                    cutoff = self.policy.cutoff(table, report.started_at)
                    n = 0 if cutoff is None else await repo.count_prunable(tx, table, cutoff)
                    report.deleted[table.name] = n
                report.sizes = await repo.sizes(tx)
            return report
        async with self.db.write() as tx:
            if not await leases.acquire(tx, LEASE, self.owner, LEASE_TTL, report.started_at):
                report.ran = False
                return report
        errors: list[str] = []
        for table in repo.PRUNED_TABLES:
            try:
                report.deleted[table.name] = await self._prune(table, report.started_at)
            except LostLease as exc:  # another replica prunes now: leave the rest to it
                errors.append(str(exc))
                break
            except Exception as exc:  # one table's failure is reported; the rest go on
                log.warning("retention: %s not pruned: %s", table.name, error_line(exc))
                errors.append(f"{table.name}: {error_line(exc)}")
        try:
            async with self.db.read() as tx:
                report.sizes = await repo.sizes(tx)
        except Exception as exc:
            log.warning("retention: table sizes not measured: %s", error_line(exc))
            errors.append(f"sizes: {error_line(exc)}")
        report.error = "; ".join(errors) or None
        async with self.db.write() as tx:
            await repo.record(
                tx,
                started_at=report.started_at,
                finished_at=utcnow(),
                deleted=report.deleted,
                table_sizes=report.sizes,
                error=report.error,
            )
            await leases.release(tx, LEASE, self.owner)
        return report

    async def _prune(self, table: repo.PrunedTable, now: datetime) -> int:
        cutoff = self.policy.cutoff(table, now)
        if cutoff is None:
            return 0
        walk, deleted = repo.Walk(), 0
        while not walk.done:
            async with self.db.write() as tx:
                if not await leases.renew(tx, LEASE, self.owner, LEASE_TTL, utcnow()):
                    raise LostLease("retention: the lease was lost mid-pass (another replica)")
                ids = await repo.next_batch(tx, table, cutoff, walk, self.batch)
                deleted += await repo.delete_ids(tx, table, ids)
            await asyncio.sleep(0)  # the loop, and other writers, between batches
        return deleted


class LostLease(Exception):
    pass


class RetentionWorker(Worker):
    """Runs a pass when the last one (by any replica) is `interval` old."""

    name = "retention"

    def __init__(self, pruner: Pruner, *, first_delay: timedelta = FIRST_DELAY) -> None:
        self.pruner = pruner
        self._next_due: datetime | None = utcnow() + first_delay if first_delay else None

    async def run_once(self) -> bool:
        now = utcnow()
        if self._next_due is not None and now < self._next_due:
            return False
        async with self.pruner.db.read() as tx:
            last = await repo.last(tx)
        due = now if last is None else last.started_at + self.pruner.policy.interval
        if due > now:
            self._next_due = due
            return False
        report = await self.pruner.prune()
        self._next_due = utcnow() + (self.pruner.policy.interval if report.ran else LEASE_TTL)
        if report.ran:
            log.info("retention: pruned %s", report.deleted)
        return False  # at most one pass per interval: nothing follows at once

    async def idle_timeout(self, poll_interval: float) -> float:
        if self._next_due is None:
            return poll_interval
        return max(poll_interval, (self._next_due - utcnow()).total_seconds())
