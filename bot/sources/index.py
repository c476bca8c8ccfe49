"""Source records in the search index: one document per record, with its source and scope,
so `maka search`, `/search` and later memory tools find chat history and mail.

The workers index records after the transactions that stored them commit, in batches, by
following `source_records` in `seq` order (`SourceIndexWorker`), whichever way the records came
in (webhook ingest on a web replica, a sync on any replica). Web replicas never tokenize or
write the index, so ingest stays fast. The follower keeps its checkpoint in the source row
`index:search` (shown by `maka sync status`, with its last error when the search backend
fails). A seq can appear late (PostgreSQL hands out ids before commit, and transactions commit
in any order) or never (a conflicting insert or a rollback consumes one): the checkpoint stops
before such a gap until the missing seq shows up or `GAP_TIMEOUT` passes, so a late record is
still indexed and a permanent gap does not hold the checkpoint back for ever.

`maka sync` indexes what it stores itself (it may run with no service at all) through
`SourceIndexer.after_commit`; `maka search rebuild` calls `SourceIndexer.rebuild`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta

from bot.host.workers import Worker
from bot.memory.search import SearchService
from sources.feishu_records import KIND as FEISHU
from storage.db import Database
from storage.models import SourceRecord
from storage.repos import leases
from storage.repos import sources as repo
from storage.repos.sources import NewRecord
from storage.search import SearchDocument
from storage.types import utcnow

log = logging.getLogger(__name__)

BATCH = 500
INDEX_SOURCE = "index:search"  # the follower's source row: its checkpoint and errors
INDEX_KIND = "index"
INDEX_LEASE = "sources.index"  # one follower at a time across replicas
GAP_TIMEOUT = 60.0  # seconds a missing seq may take to show up before it is passed over
GATHER_SECONDS = 0.2  # a burst of records becomes one index write
BACKLOG = 5000  # past this many queued records, the sync waits for the index to catch up
MAX_INDEXED_CHARS = 100_000

Indexable = NewRecord | SourceRecord


def document_kind(source: str) -> str:
    return "source_message" if source.startswith(f"{FEISHU}:") else "source_mail"


def document_id(source: str, external_id: str) -> str:
    return f"source:{source}:{external_id}"


def record_document(record: Indexable, source_title: str | None) -> SearchDocument:
    """Mail: its subject is the title. Chat messages: the chat's name (from its source row)."""
    if document_kind(record.source) == "source_mail":
        title = record.title or ""
    else:
        title = record.title or source_title or record.scope
    return SearchDocument(
        id=document_id(record.source, record.external_id),
        kind=document_kind(record.source),
        text=record.text[:MAX_INDEXED_CHARS],
        title=title,
        source_id=record.source,
        scope=record.scope,
        time=record.sent_at,
    )


class SourceIndexer:
    def __init__(self, db: Database, search: SearchService) -> None:
        self.db = db
        self.search = search
        self.failed = 0  # records whose indexing the backend refused (rebuild repairs them)
        self._queue: list[Indexable] = []
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    # ---- feeding ---------------------------------------------------------------------------

    def enqueue(self, records: Sequence[Indexable]) -> None:
        """Queue committed records for indexing (never blocks: ingest calls this)."""
        if self._closed or not records:
            return
        self._queue.extend(records)
        self._idle.clear()
        self._wake.set()
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="source-indexer")

    async def after_commit(self, new: list[tuple[int, NewRecord]]) -> None:
        """The sync runner's hook: queue, and wait when the index falls far behind."""
        self.enqueue([record for _, record in new])
        if len(self._queue) > BACKLOG:
            await self.flush()

    async def flush(self) -> None:
        """Return once everything queued so far has been handed to the index."""
        if self._queue or not self._idle.is_set():
            self._wake.set()
            if self._task is None or self._task.done():
                self._task = asyncio.create_task(self._run(), name="source-indexer")
            await self._idle.wait()

    async def close(self) -> None:
        await self.flush()
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            await asyncio.sleep(GATHER_SECONDS)
            while self._queue:
                batch, self._queue = self._queue[:BATCH], self._queue[BATCH:]
                try:
                    ok = await self.index(batch)
                except Exception:  # the database read for titles failed: rebuild repairs it
                    log.exception("indexing %d source records failed", len(batch))
                    ok = False
                if not ok:
                    self.failed += len(batch)
            self._idle.set()

    # ---- writing -------------------------------------------------------------------------

    async def index(self, records: Sequence[Indexable]) -> bool:
        if not records:
            return True
        names = sorted({r.source for r in records if document_kind(r.source) != "source_mail"})
        titles: dict[str, str | None] = {}
        if names:
            async with self.db.read() as session:
                titles = await repo.titles(session, names)
        return await self.search.upsert([record_document(r, titles.get(r.source)) for r in records])

    async def rebuild(self) -> int:
        """Index every stored source record again (`maka search rebuild`)."""
        count, last_id = 0, 0
        while True:
            async with self.db.read() as session:
                rows = await repo.records_after(session, last_id, BATCH)
            if not rows:
                return count
            last_id = rows[-1].id
            if not await self.index(rows):
                raise RuntimeError("the search backend refused documents; see the log")
            count += len(rows)


class SourceIndexWorker(Worker):
    """Follows `source_records` by seq and indexes every record (see the module docstring)."""

    name = "source-index"
    topics = ("source-index",)

    def __init__(
        self,
        db: Database,
        indexer: SourceIndexer,
        owner: str,
        *,
        batch: int = BATCH,
        gap_timeout: float = GAP_TIMEOUT,
        lease: timedelta = timedelta(seconds=60),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.db, self.indexer, self.owner = db, indexer, owner
        self.batch, self.gap_timeout, self.lease, self.clock = batch, gap_timeout, lease, clock
        self.checkpoint: int | None = None  # every seq <= this is indexed (or passed over)
        self.seen_to = 0  # the highest seq indexed by this process
        self.gaps: dict[tuple[int, int], float] = {}  # missing seqs (inclusive) -> first noticed
        self._lease_until: datetime | None = None

    async def run_once(self) -> bool:
        if not await self._hold_lease():
            return False
        did = await self._fill_gaps()
        async with self.db.read() as session:
            rows = await repo.records_after(session, self.seen_to, self.batch)
        if rows:
            await self._index(rows)
            self._note_gaps(self.seen_to, [r.id for r in rows])
            self.seen_to = rows[-1].id
            did = True
        await self._advance()
        return did

    async def _hold_lease(self) -> bool:
        """Take or renew the follower's lease; an idle poll only reads (on SQLite a write
        would take the one write lock every second)."""
        now = utcnow()
        if self._lease_until is not None and self._lease_until - now > self.lease / 2:
            return True
        async with self.db.read() as session:
            holder = await leases.holder(session, INDEX_LEASE, now)
        if holder not in (None, self.owner):
            self.checkpoint, self._lease_until = None, None  # another replica follows
            return False
        async with self.db.write() as session:
            if not await leases.acquire(session, INDEX_LEASE, self.owner, self.lease, now):
                self.checkpoint, self._lease_until = None, None
                return False
            self._lease_until = now + self.lease
            if self.checkpoint is None:
                await repo.ensure(
                    session,
                    name=INDEX_SOURCE,
                    kind=INDEX_KIND,
                    scope=None,
                    title="search index",
                    now=utcnow(),
                )
                row = await repo.get(session, INDEX_SOURCE)
                assert row is not None
                self.checkpoint = int((row.synced_cursor or {}).get("seq", 0))
                self.seen_to, self.gaps = self.checkpoint, {}
        return True

    async def _fill_gaps(self) -> bool:
        if not self.gaps:
            return False
        async with self.db.read() as session:
            late = await repo.records_between(session, list(self.gaps), self.batch)
        if not late:
            return False
        await self._index(late)
        found = {r.id for r in late}
        for (first, last), noticed in list(self.gaps.items()):
            inside = sorted(i for i in found if first <= i <= last)
            if not inside:
                continue
            del self.gaps[(first, last)]
            start = first
            for seq in inside:
                if start < seq:
                    self.gaps[(start, seq - 1)] = noticed
                start = seq + 1
            if start <= last:
                self.gaps[(start, last)] = noticed
        return True

    def _note_gaps(self, after: int, seqs: list[int]) -> None:
        now = self.clock()
        expected = after + 1
        for seq in seqs:
            if seq > expected:
                self.gaps[(expected, seq - 1)] = now
            expected = seq + 1

    async def _advance(self) -> None:
        now = self.clock()
        for gap, noticed in list(self.gaps.items()):
            if now - noticed >= self.gap_timeout:
                del self.gaps[gap]  # a conflict or a rollback used it: nothing will come
        checkpoint = min(first for first, _ in self.gaps) - 1 if self.gaps else self.seen_to
        if checkpoint == self.checkpoint:
            return
        async with self.db.write() as session:
            await repo.set_progress(
                session, INDEX_SOURCE, synced_cursor={"seq": checkpoint}, now=utcnow()
            )
        self.checkpoint = checkpoint

    async def _index(self, rows: Sequence[SourceRecord]) -> None:
        if await self.indexer.index(rows):
            return
        error = f"the search backend refused {len(rows)} records (seq {rows[0].id}-{rows[-1].id})"
        async with self.db.write() as session:
            await repo.set_progress(
                session, INDEX_SOURCE, synced_cursor=None, now=utcnow(), error=error
            )
        raise RuntimeError(error)  # the Host backs off and retries
