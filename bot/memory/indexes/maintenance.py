"""Keeping memory indexes: a background loop of its own, apart from discovery and task wakes.

Each cycle claims one due index (`storage/claims.py`) and either checks it or organizes:
- no open range: count the records of its scopes after its coverage. Nothing new is a
  recorded check with no model call; a failed count is `check_failed` with the error and an
  unknown pending count, never "no changes".
- a range (covered, end] is open (fixed when it was found): one indexing turn works it from
  where the last one stopped. `complete` moves coverage to the range's end; `partial` keeps
  the range and records how far it got; a failure keeps both and shows the error.
A range never reaches past a record id that is missing but may still appear (a transaction
that took it has not committed yet, on PostgreSQL): it ends before the gap, and the check
comes back when the gap fills or is passed over (`storage.seq_gaps`, the rule the search
followers keep), so a record that commits late is still covered. Each check scans for gaps
only above where the last one found none may still appear (`settled`, of any scope, kept in
memory), up to the newest record even when nothing of the index's scopes is new: the coverage
of a quiet chat's index stays at that chat's last record, and a scan from there would read
every record the other chats had since, each time that chat has a new one. After a restart
the first check scans from the coverage.
Killed mid-turn, nothing moved: the next cycle redoes the batch, and entries, keyed and
revision-checked, are not doubled. Notices (ready, failed) go to the owner's Bot inbox.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta, tzinfo

from sqlalchemy.exc import SQLAlchemyError

from bot.host.backoff import error_line, log_failure
from bot.host.workers import Worker
from bot.memory.indexes.service import TOPIC, IndexService
from bot.memory.indexes.tools import IndexerContext
from bot.memory.indexes.turn import IndexerTurn, TurnOutcome
from storage import claims
from storage.db import Database
from storage.models import MemoryIndex
from storage.repos import memory_indexes as repo
from storage.repos import sessions, source_records
from storage.seq_gaps import GAP_TIMEOUT, SeqGaps
from storage.types import utcnow

log = logging.getLogger(__name__)
RETRY_AFTER = timedelta(minutes=5)  # a failed check or turn is tried again no sooner


class IndexMaintenanceWorker(Worker):
    name = "memory-indexes"
    topics = (TOPIC,)

    def __init__(
        self,
        db: Database,
        service: IndexService,
        turn: IndexerTurn,
        *,
        owner: str,
        tz: tzinfo,
        gap_timeout: float = GAP_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.db, self.service, self.turn, self.owner, self.tz = db, service, turn, owner, tz
        self.lease = timedelta(seconds=turn.timeout + 60)
        self.gap_timeout, self.clock = gap_timeout, clock
        self.gaps: dict[int, SeqGaps] = {}  # per index: record ids missing above its coverage
        self.settled: dict[int, int] = {}  # per index: ids up to here are in or passed over

    async def run_once(self) -> bool:
        now = utcnow()
        async with self.db.read() as tx:
            if not await repo.has_due(tx, now):
                return False
        async with self.db.write() as tx:
            # Detached once this transaction ends: the index as it was claimed (each write
            # below loads its own row).
            claimed = await repo.claim_due(tx, owner=self.owner, lease=self.lease, now=now)
            if claimed is None:
                return False
        try:
            await self.maintain(claimed)
        except Exception as exc:  # recorded and retried after RETRY_AFTER, like a failed
            # turn: raised, it left the index due, and the loop ran its model turn again
            log_failure(log, f"maintaining index {claimed.id} failed", exc)
            await self._fail(claimed, "maintenance_failed", error_line(exc))
        finally:
            async with self.db.write() as tx:
                await claims.release_rows(tx, MemoryIndex, self.owner, [claimed.id])
        return True

    async def maintain(self, index: MemoryIndex) -> None:
        start, end = index.range_done or index.covered_cursor, index.range_end
        if end is None:
            found = await self._check(index)
            if found is None:
                return
            start, end = index.covered_cursor, found
        async with self.db.write() as tx:
            row = await tx.get(MemoryIndex, index.id)
            assert row is not None
            session_id = await repo.indexer_session(tx, row, utcnow())
        ctx = IndexerContext(self.db, self.tz, index.id, index.scopes, start, end)
        outcome = await self.turn.run(index, ctx)
        await self._settle(index, start, end, outcome, session_id)

    async def _check(self, index: MemoryIndex) -> int | None:
        """Open a range when records came after the coverage: its end; None otherwise."""
        now = utcnow()
        try:
            async with self.db.read() as tx:
                backlog = await repo.backlog(tx, index.scopes, index.covered_cursor)
                upto = backlog.last_seq if backlog.count else await source_records.max_seq(tx)
                since = max(index.covered_cursor, self.settled.get(index.id, 0))
                missing = (
                    await repo.missing_seqs(
                        tx, since, upto, young_since=now - timedelta(seconds=self.gap_timeout)
                    )
                    if upto > since
                    else []
                )
        except (SQLAlchemyError, OSError) as exc:
            log.warning("checking index %s failed: %s", index.id, exc)
            await self._fail(index, "check_failed", f"checking for new records failed: {exc}")
            return None
        end = self._settled_end(index, missing, upto)
        self.settled[index.id] = max(since, end)
        async with self.db.write() as tx:
            row = await tx.get(MemoryIndex, index.id)
            assert row is not None
            row.last_checked_at = row.updated_at = now
            row.pending_count = backlog.count
            if backlog.count == 0:
                row.status = "no_changes_at_last_check"
                row.next_check_at = now + _interval(index)
                return None
            if end <= index.covered_cursor:  # only records above an id still in flight
                row.status = "updating"  # records are pending: never "no changes"
                row.next_check_at = now + timedelta(seconds=self.gap_timeout)
                return None
            row.status, row.range_end, row.range_done = "updating", end, None
        return end

    def _settled_end(self, index: MemoryIndex, missing: list[tuple[int, int]], last: int) -> int:
        """How far a range may reach: before the first missing id that may still appear."""
        gaps = self.gaps.setdefault(index.id, SeqGaps(self.gap_timeout))
        now = self.clock()
        gaps.forget_through(index.covered_cursor)
        gaps.observe(missing, now)
        gaps.expire(now)
        return gaps.horizon(last)

    async def _settle(
        self, index: MemoryIndex, start: int, end: int, outcome: TurnOutcome, session_id: int
    ) -> None:
        if outcome.finished == "partial" and outcome.read_to <= start:
            outcome = TurnOutcome(None, outcome.read_to, outcome.written, "made no progress")
        if outcome.finished is None:
            await self._fail(index, "maintenance_failed", outcome.error or "failed")
            await self._log(session_id, f"failed in rec-{start}..rec-{end}: {outcome.error}")
            return
        now = utcnow()
        ready = None
        async with self.db.write() as tx:
            row = await tx.get(MemoryIndex, index.id)
            assert row is not None
            row.status, row.last_error, row.next_check_at = "updating", None, now
            row.last_organized_at = row.updated_at = now
            if outcome.finished == "complete":
                row.covered_cursor, row.range_end, row.range_done = end, None, None
                row.pending_count = 0
                if not row.ready_notified:
                    row.ready_notified = True
                    ready = await repo.count_entries(tx, row.id)
            else:
                row.range_done = outcome.read_to
                row.pending_count = await repo.count_in_range(
                    tx, index.scopes, outcome.read_to, end
                )
        await self._log(
            session_id,
            f"{outcome.finished}: rec-{start}..rec-{end}, read to rec-{outcome.read_to}, "
            f"{outcome.written} entries written. {outcome.note}".strip(),
        )
        if ready is not None:
            await self.service.notify_owner(
                index,
                f"The index {index.name!r} is ready: {ready} entries so far.",
                "ready",
            )

    async def _fail(self, index: MemoryIndex, status: str, error: str) -> None:
        now = utcnow()
        async with self.db.write() as tx:
            row = await tx.get(MemoryIndex, index.id)
            assert row is not None
            row.status, row.last_error, row.last_error_at = status, error[:2000], now
            row.updated_at = now
            row.next_check_at = now + min(RETRY_AFTER, _interval(index))
            if status == "check_failed":
                row.pending_count = None  # unknown, not 0
        if index.status != status:  # once per run of failures
            await self.service.notify_owner(
                index,
                f"The index {index.name!r} could not be kept up to date: {error}",
                f"{status}:{_stamp(now)}",
            )

    async def _log(self, session_id: int, text: str) -> None:
        async with self.db.write() as tx:
            await sessions.append_events(tx, session_id, [("status", text, None)], utcnow())


def _interval(index: MemoryIndex) -> timedelta:
    return timedelta(seconds=index.interval_seconds)


def _stamp(at: datetime) -> str:
    return at.strftime("%Y%m%dT%H%M%S")
