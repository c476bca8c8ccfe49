"""A durable follower of an append-only table: it reads rows in id order after the commits
that stored them, hands them on in batches (to the search index), and keeps a checkpoint, so
a crash or an outage of whatever it feeds never loses a row.

One replica follows at a time (a lease). The checkpoint lives in a source row of kind `index`
(`index:search`, `index:sessions`, shown by `maka sync status` with the last error when the
consumer refuses a batch). When a batch is refused the follower records the error and raises;
the Host backs off and retries the same rows.

An id can appear late (PostgreSQL hands out ids before commit, and transactions commit in any
order) or never (a conflicting insert or a rollback consumes one): the checkpoint stops before
such a gap until the missing id shows up or `GAP_TIMEOUT` passes (`storage.seq_gaps`, the
rule memory index coverage follows too), so a late row is still handled and a permanent gap
does not hold the checkpoint back for ever. After a restart the
follower starts again from the checkpoint: rows between it and what was handled before are
handled twice, which is harmless for an index keyed by document id.

Subclasses say where the rows are (`read_after`, `read_between`), what a row's id is
(`id_of`) and what to do with a batch (`handle`).
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import ClassVar, Generic, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

from bot.host.workers import Worker
from storage.db import Database
from storage.repos import leases
from storage.repos import sources as source_rows
from storage.seq_gaps import GAP_TIMEOUT, SeqGaps, missing_between
from storage.types import utcnow

# Seconds between two batches while rows keep coming one by one. Each batch costs an index
# commit (a segment written and the searcher reloaded) and a checkpoint write whatever its
# size: under a steady stream of messages a follower committed one or two rows at a time,
# dozens of times a second (a quarter of a busy PostgreSQL replica's CPU per message). A row
# after a quiet spell is still handled at once, and a full batch (a backlog) goes on without
# a pause.
PACE = 0.5
CHECKPOINT_KIND = "index"  # the kind of the source rows that hold followers' checkpoints
LEASE = timedelta(seconds=60)

Row = TypeVar("Row")


class Follower(Worker, Generic[Row]):
    """Follows a table by id and hands every row on once committed (see the module docstring)."""

    checkpoint_source: ClassVar[str]  # the source row holding the checkpoint and errors
    lease_name: ClassVar[str]  # one follower at a time across replicas
    title: ClassVar[str]  # the source row's title
    unit: ClassVar[str] = "rows"  # what the rows are, in error messages

    def __init__(
        self,
        db: Database,
        owner: str,
        *,
        batch: int,
        gap_timeout: float = GAP_TIMEOUT,
        lease: timedelta = LEASE,
        clock: Callable[[], float] = time.monotonic,
        pace: float = PACE,
    ) -> None:
        self.db, self.owner = db, owner
        self.batch, self.lease, self.clock = batch, lease, clock
        self.pace = pace
        self._behind = False  # the last batch was full: more is waiting
        self.checkpoint: int | None = None  # every id <= this is handled (or passed over)
        self.seen_to = 0  # the highest id handled by this process
        self.gaps = SeqGaps(gap_timeout)  # ids missing below seen_to
        self._lease_until: datetime | None = None

    # ---- what a subclass says --------------------------------------------------------------

    @abstractmethod
    async def read_after(self, tx: AsyncSession, after: int, limit: int) -> Sequence[Row]:
        """Up to `limit` rows with an id above `after`, in id order."""

    @abstractmethod
    async def read_between(
        self, tx: AsyncSession, ranges: Sequence[tuple[int, int]], limit: int
    ) -> Sequence[Row]:
        """Rows whose id lies in any of the inclusive `ranges`, in id order."""

    @abstractmethod
    def id_of(self, row: Row) -> int: ...

    @abstractmethod
    async def handle(self, rows: Sequence[Row]) -> bool:
        """Hand the rows on; False when the consumer refused them (they are tried again)."""

    # ---- following -------------------------------------------------------------------------

    async def run_once(self) -> bool:
        if not await self._hold_lease():
            return False
        did = await self._fill_gaps()
        async with self.db.read() as tx:
            rows = await self.read_after(tx, self.seen_to, self.batch)
        if rows:
            await self._handle(rows)
            ids = [self.id_of(r) for r in rows]
            self.gaps.add(missing_between(self.seen_to, ids), self.clock())
            self.seen_to = ids[-1]
            did = True
        self._behind = len(rows) >= self.batch
        await self._advance()
        return did

    def pause_after_work(self) -> float:
        return 0.0 if self._behind else self.pace

    async def _hold_lease(self) -> bool:
        """Take or renew the follower's lease; an idle poll only reads (on SQLite a write
        would take the one write lock every second)."""
        now = utcnow()
        if self._lease_until is not None and self._lease_until - now > self.lease / 2:
            return True
        async with self.db.read() as tx:
            holder = await leases.holder(tx, self.lease_name, now)
        if holder not in (None, self.owner):
            self.checkpoint, self._lease_until = None, None  # another replica follows
            return False
        async with self.db.write() as tx:
            if not await leases.acquire(tx, self.lease_name, self.owner, self.lease, now):
                self.checkpoint, self._lease_until = None, None
                return False
            self._lease_until = now + self.lease
            if self.checkpoint is None:
                self.checkpoint = await self._load_checkpoint(tx)
                self.seen_to, self.gaps = self.checkpoint, SeqGaps(self.gaps.timeout)
        return True

    async def _load_checkpoint(self, tx: AsyncSession) -> int:
        await source_rows.ensure(
            tx,
            name=self.checkpoint_source,
            kind=CHECKPOINT_KIND,
            scope=None,
            title=self.title,
            now=utcnow(),
        )
        row = await source_rows.get(tx, self.checkpoint_source)
        assert row is not None
        return int((row.synced_cursor or {}).get("seq", 0))

    async def _fill_gaps(self) -> bool:
        if not self.gaps.noticed:
            return False
        async with self.db.read() as tx:
            late = await self.read_between(tx, self.gaps.ranges, self.batch)
        if not late:
            return False
        await self._handle(late)
        self.gaps.found(self.id_of(r) for r in late)
        return True

    async def _advance(self) -> None:
        self.gaps.expire(self.clock())
        checkpoint = self.gaps.horizon(self.seen_to)
        self.gaps.forget_through(checkpoint)
        if checkpoint == self.checkpoint:
            return
        async with self.db.write() as tx:
            await source_rows.set_progress(
                tx, self.checkpoint_source, synced_cursor={"seq": checkpoint}, now=utcnow()
            )
        self.checkpoint = checkpoint

    async def _handle(self, rows: Sequence[Row]) -> None:
        if await self.handle(rows):
            return
        first, last = self.id_of(rows[0]), self.id_of(rows[-1])
        error = f"the search backend refused {len(rows)} {self.unit} (seq {first}-{last})"
        async with self.db.write() as tx:
            await source_rows.set_progress(
                tx, self.checkpoint_source, synced_cursor=None, now=utcnow(), error=error
            )
        raise RuntimeError(error)  # the Host backs off and retries
