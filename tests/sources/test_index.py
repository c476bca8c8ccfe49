"""Search indexing of source records by the workers: every record once committed, whichever
way it came, in seq order with late and missing seqs handled, failures visible."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import pytest
from sqlalchemy import select

from bot.memory.search import SearchService
from bot.memory.source_index import INDEX_SOURCE, SourceIndexer, SourceIndexWorker
from bot.sync.status import load_status
from storage.db import Database
from storage.models import Source
from storage.repos import source_records as repo
from storage.repos.source_records import NewRecord
from storage.search import SearchDocument, SearchError, SearchFilters, SearchHit
from storage.types import utcnow
from tests.feishu_world import WorldFactory
from tests.waiting import wait_until


class MemoryIndex:
    """A search index that remembers what it was given (and can be told to fail)."""

    def __init__(self) -> None:
        self.docs: dict[str, SearchDocument] = {}
        self.broken = False

    async def upsert(self, docs: Sequence[SearchDocument]) -> None:
        if self.broken:
            raise SearchError("index offline")
        self.docs.update((d.id, d) for d in docs)

    async def delete(self, ids: Sequence[str]) -> None:
        for i in ids:
            self.docs.pop(i, None)

    async def search(
        self, query: str, filters: SearchFilters | None = None, limit: int = 10
    ) -> list[SearchHit]:
        return []

    async def clear(self) -> None:
        self.docs.clear()

    async def close(self) -> None:
        pass

    async def health(self) -> None:
        pass


def record(n: int, source: str = "email:INBOX") -> NewRecord:
    return NewRecord(
        source=source,
        external_id=f"key-{n}",
        scope="mail:INBOX",
        text=f"mail number {n}",
        sent_at=datetime(2024, 5, 1, tzinfo=UTC),
        title=f"subject {n}",
    )


async def write(db: Database, *records: NewRecord) -> None:
    async with db.write() as s:
        await repo.insert_records(s, list(records), utcnow())


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def checkpoint(db: Database) -> int:
    async with db.read() as s:
        row = await s.scalar(select(Source).where(Source.name == INDEX_SOURCE))
    return int(((row.synced_cursor if row else None) or {}).get("seq", 0))


async def test_records_are_indexed_in_order_and_the_checkpoint_survives_a_restart(
    db: Database,
) -> None:
    index = MemoryIndex()
    worker = SourceIndexWorker(db, SourceIndexer(db, SearchService(index)), "w1")
    await write(db, record(1), record(2))
    assert await worker.run_once()
    assert not await worker.run_once()  # nothing new
    assert set(index.docs) == {"source:email:INBOX:key-1", "source:email:INBOX:key-2"}
    doc = index.docs["source:email:INBOX:key-1"]
    assert (doc.kind, doc.title, doc.scope, doc.source_id) == (
        "source_mail",
        "subject 1",
        "mail:INBOX",
        "email:INBOX",
    )
    assert await checkpoint(db) == 2

    await write(db, record(3))
    index.docs.clear()
    restarted = SourceIndexWorker(db, SourceIndexer(db, SearchService(index)), "w1")
    assert await restarted.run_once()
    assert set(index.docs) == {"source:email:INBOX:key-3"}  # from the checkpoint on


async def test_a_late_seq_is_still_indexed_and_a_missing_one_is_passed_over(
    db: Database,
) -> None:
    if db.is_sqlite:
        pytest.skip("SQLite writes one at a time: seqs appear in order")
    index, clock = MemoryIndex(), Clock()
    worker = SourceIndexWorker(
        db, SourceIndexer(db, SearchService(index)), "w1", gap_timeout=30, clock=clock
    )
    await write(db, record(1))
    assert await worker.run_once()

    late = db.sessions()  # a transaction that took its seq and has not committed yet
    await repo.insert_records(late, [record(2)], utcnow())
    await write(db, record(3))
    assert await worker.run_once()
    assert "source:email:INBOX:key-3" in index.docs
    assert await checkpoint(db) == 1  # not past the seq still in flight
    await late.commit()
    await late.close()
    assert await worker.run_once()
    assert "source:email:INBOX:key-2" in index.docs
    assert await checkpoint(db) == 3

    lost = db.sessions()  # this one rolls back: its seq never shows up
    await repo.insert_records(lost, [record(4)], utcnow())
    await lost.rollback()
    await lost.close()
    await write(db, record(5))
    assert await worker.run_once()
    assert await checkpoint(db) == 3
    clock.now += 31
    await worker.run_once()
    assert await checkpoint(db) == 5


async def test_one_replica_follows_at_a_time(db: Database) -> None:
    first, second = MemoryIndex(), MemoryIndex()
    a = SourceIndexWorker(db, SourceIndexer(db, SearchService(first)), "replica-a")
    b = SourceIndexWorker(db, SourceIndexer(db, SearchService(second)), "replica-b")
    await write(db, record(1))
    assert await a.run_once()
    assert not await b.run_once()
    assert first.docs and not second.docs


async def test_a_failing_search_backend_shows_as_an_error_and_catches_up(db: Database) -> None:
    index = MemoryIndex()
    worker = SourceIndexWorker(db, SourceIndexer(db, SearchService(index)), "w1")
    await write(db, record(1))
    index.broken = True
    with pytest.raises(RuntimeError, match="refused 1 records"):
        await worker.run_once()
    [status] = [s for s in await load_status(db) if s.name == INDEX_SOURCE]
    assert status.state == "error" and "refused" in (status.last_error or "")
    index.broken = False
    assert await worker.run_once()
    [status] = [s for s in await load_status(db) if s.name == INDEX_SOURCE]
    assert status.state == "ok" and status.last_error is None
    assert "source:email:INBOX:key-1" in index.docs


async def test_webhook_messages_are_indexed_by_the_workers(make_world: WorldFactory) -> None:
    async with make_world(sync_feishu_interval=0) as w:
        event = w.message("发布后出现大量重连", chat_id="oc_dm", sender_open_id="ou_user")
        assert (await w.events.post(event))[0] == 200
        search = w.app.services.search

        async def found() -> bool:
            return bool(await search.search("重连", SearchFilters(kinds=["source_message"])))

        await wait_until(found)
        [hit] = await search.search("重连", SearchFilters(kinds=["source_message"]))
        assert hit.scope == "dm:ou_user" and hit.source_id == "feishu:oc_dm"
