"""Source records in the search index: one document per record, with its source and scope,
so `maka search`, `/search` and later memory tools find chat history and mail.

The workers index records after the transactions that stored them commit, in batches, by
following `source_records` in `seq` order (`SourceIndexWorker`, a `bot.memory.follower`
follower like the one for Session logs), whichever way the records came in (webhook ingest on
a web replica, a sync on any replica). Web replicas never tokenize or write the index, so
ingest stays fast. The follower keeps its checkpoint in the source row `index:search` (shown
by `maka sync status`, with its last error when the search backend fails); a seq that appears
late is still indexed, and one that never appears is passed over after `GAP_TIMEOUT`.

`maka sync` indexes what it stores itself (it may run with no service at all) through
`SourceIndexer.after_commit`; `maka search rebuild` calls `SourceIndexer.rebuild`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from bot.attachments.records import attachment_of
from bot.memory.follower import GAP_TIMEOUT, PACE, Follower
from bot.memory.search import SearchService
from sources.feishu.records import holds_chat_messages
from storage.db import Database
from storage.models import SourceRecord
from storage.repos import source_records
from storage.repos import sources as repo
from storage.repos.source_records import NewRecord
from storage.search import SearchDocument

log = logging.getLogger(__name__)

BATCH = 500
TOPIC = source_records.RECORDS_TOPIC
INDEX_SOURCE = "index:search"  # the follower's source row: its checkpoint and errors
INDEX_LEASE = "sources.index"  # one follower at a time across replicas
GATHER_SECONDS = 0.2  # a burst of records becomes one index write
BACKLOG = 5000  # past this many queued records, the sync waits for the index to catch up
MAX_INDEXED_CHARS = 100_000

Indexable = NewRecord | SourceRecord


def document_kind(source: str) -> str:
    return "source_message" if holds_chat_messages(source) else "source_mail"


def document_id(source: str, external_id: str) -> str:
    return f"source:{source}:{external_id}"


def record_document(record: Indexable, source_title: str | None) -> SearchDocument:
    """Mail: its subject is the title. Chat messages: the chat's name (from its source row).
    A file a message or mail carried: "attachment 'a.pdf' in <chat>"."""
    info = attachment_of(record.payload)
    if document_kind(record.source) == "source_mail":
        title = record.title or ""
        if info is not None:
            title = f"attachment {info.get('name') or title!r}"
    elif info is not None:
        title = f"attachment {info.get('name') or record.title!r} in {source_title or record.scope}"
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
        """Index the records; a tombstone (a recalled message: `source_records.is_tombstone`)
        deletes its document instead, after the upserts (a record and its tombstone may share
        a batch when a sync queues them)."""
        if not records:
            return True
        gone = [r for r in records if source_records.is_tombstone(r.payload)]
        kept = [r for r in records if not source_records.is_tombstone(r.payload)]
        names = sorted({r.source for r in kept if document_kind(r.source) != "source_mail"})
        titles: dict[str, str | None] = {}
        if names:
            async with self.db.read() as tx:
                titles = await repo.titles(tx, names)
        ok = await self.search.upsert([record_document(r, titles.get(r.source)) for r in kept])
        deleted = await self.search.delete([document_id(r.source, r.external_id) for r in gone])
        return ok and deleted

    async def rebuild(self) -> int:
        """Index every stored source record again (`maka search rebuild`)."""
        count, last_id = 0, 0
        while True:
            async with self.db.read() as tx:
                rows = await source_records.records_after(tx, last_id, BATCH)
            if not rows:
                return count
            last_id = rows[-1].id
            if not await self.index(rows):
                raise RuntimeError("the search backend refused documents; see the log")
            count += len(rows)


class SourceIndexWorker(Follower[SourceRecord]):
    """Follows `source_records` by seq and indexes every record (see the module docstring)."""

    name = "source-index"
    topics = (TOPIC,)
    checkpoint_source = INDEX_SOURCE
    lease_name = INDEX_LEASE
    title = "search index"
    unit = "records"

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
        pace: float = PACE,
    ) -> None:
        super().__init__(
            db, owner, batch=batch, gap_timeout=gap_timeout, lease=lease, clock=clock, pace=pace
        )
        self.indexer = indexer

    async def read_after(self, tx: AsyncSession, after: int, limit: int) -> Sequence[SourceRecord]:
        return await source_records.records_after(tx, after, limit)

    async def read_between(
        self, tx: AsyncSession, ranges: Sequence[tuple[int, int]], limit: int
    ) -> Sequence[SourceRecord]:
        return await source_records.records_between(tx, ranges, limit)

    def id_of(self, row: SourceRecord) -> int:
        return row.id

    async def handle(self, rows: Sequence[SourceRecord]) -> bool:
        return await self.indexer.index(rows)
