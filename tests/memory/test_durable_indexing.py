"""Session logs reach the search index through a durable follower, as source records do: a
search outage, a restart or an id that commits late loses nothing, and `maka search rebuild`
brings back every kind of document (Session messages, source records, Session digests).

Real components: SQLite and PostgreSQL, the embedded tantivy index (wrapped to refuse writes
where a test needs an outage); gap timeouts run on the follower's injectable clock."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.cli.search import rebuild
from bot.host.notify import Notifier
from bot.host.workers import Host
from bot.llm.client import MemoryRecorder, ModelClient
from bot.llm.scripted import ScriptedProvider
from bot.memory.search import SearchService
from bot.memory.session_index import INDEX_SOURCE, TOPIC, SessionIndexer, SessionIndexWorker
from bot.memory.source_index import SourceIndexer, SourceIndexWorker
from bot.sync.status import describe, load_status
from bot.workhub.summaries import SummaryWorker, record_completion
from storage.db import Database
from storage.models import Conversation, Session, SessionEvent
from storage.repos import leases, sessions, source_records
from storage.repos import sources as source_repo
from storage.repos.source_records import NewRecord
from storage.search import SearchDocument, SearchError, SearchFilters, SearchHit
from storage.search.embedded import EmbeddedSearchIndex
from storage.types import utcnow
from tests.waiting import wait_until


class RefusingIndex:
    """The real embedded index, refusing writes while `refusing` is set; it remembers which
    documents it was given, so a test can tell what was (re)indexed."""

    def __init__(self, path: Path) -> None:
        self.inner = EmbeddedSearchIndex(path)
        self.refusing = False
        self.written: list[str] = []

    async def upsert(self, docs: Sequence[SearchDocument]) -> None:
        if self.refusing:
            raise SearchError("index offline")
        await self.inner.upsert(docs)
        self.written += [d.id for d in docs]

    async def delete(self, ids: Sequence[str]) -> None:
        await self.inner.delete(ids)

    async def search(
        self, query: str, filters: SearchFilters | None = None, limit: int = 10
    ) -> list[SearchHit]:
        return await self.inner.search(query, filters, limit)

    async def clear(self) -> None:
        await self.inner.clear()

    async def close(self) -> None:
        await self.inner.close()

    async def health(self) -> None:
        await self.inner.health()


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def task_session(db: Database, name: str = "staging deploys") -> int:
    """A task Session started in a group chat."""
    async with db.write() as s:
        conv = Conversation(
            platform="feishu", chat_id=f"oc_{name.replace(' ', '_')}", chat_type="group",
            name="ops", created_at=utcnow(),
        )  # fmt: skip
        s.add(conv)
        await s.flush()
        row = Session(
            name=name, state="active", labels=[], is_archived=False,
            conversation_id=conv.id, created_at=utcnow(),
        )  # fmt: skip
        s.add(row)
        await s.flush()
        return row.id


async def log(db: Database, session_id: int, *events: tuple[str, str]) -> None:
    async with db.write() as s:
        await sessions.append_events(s, session_id, [(k, t, None) for k, t in events], utcnow())


async def found(search: SearchService, query: str, kind: str = "session_user") -> list[SearchHit]:
    return await search.search(query, SearchFilters(kinds=[kind]))


async def checkpoint(db: Database) -> int:
    async with db.read() as s:
        row = await source_repo.get(s, INDEX_SOURCE)
    return int(((row.synced_cursor if row else None) or {}).get("seq", 0))


async def index_status(db: Database) -> tuple[str, str | None]:
    """The state and last error `maka sync status` shows for index:sessions."""
    for status in await load_status(db):
        if status.name == INDEX_SOURCE:
            return status.state, status.last_error
    return "absent", None  # the follower has not started yet


async def test_an_event_logged_while_search_refuses_writes_is_indexed_once_it_is_back(
    db: Database, tmp_path: Path
) -> None:
    index, notifier = RefusingIndex(tmp_path / "idx"), Notifier()
    search = SearchService(index)
    host = Host(db, notifier, instance_id="w1", poll_interval=0.05)
    host.add(SessionIndexWorker(db, SessionIndexer(db, search), host.instance_id))
    sid = await task_session(db)
    index.refusing = True
    await host.start()
    try:
        await log(db, sid, ("user", "the ERR_CONN_RESET storm on 灰度"), ("status", "working"))
        await notifier.notify(TOPIC)

        async def refusal_shown() -> bool:
            state, error = await index_status(db)
            return state == "error" and "refused" in (error or "")

        await wait_until(refusal_shown, what="the refused write shown on index:sessions")
        assert not await found(search, "ERR_CONN_RESET")
        index.refusing = False

        async def indexed() -> bool:
            return bool(await found(search, "ERR_CONN_RESET"))

        await wait_until(indexed, what="the Host retrying the follower once search is back")
    finally:
        await host.stop(grace=5)
    [hit] = await found(search, "灰度")
    assert (hit.session_id, hit.scope) == (str(sid), "group:oc_staging_deploys")
    assert await index_status(db) == ("ok", None)
    [status] = [s for s in await load_status(db) if s.name == INDEX_SOURCE]
    assert "session events indexed for search up to seq 2 of 2" in describe(status, UTC)
    assert not await found(search, "working", "session_status")  # only the indexed kinds


async def test_a_restarted_follower_resumes_from_its_checkpoint(
    db: Database, tmp_path: Path
) -> None:
    index = RefusingIndex(tmp_path / "idx")
    search = SearchService(index)
    sid = await task_session(db)
    await log(db, sid, ("user", "rotate the staging certificate"), ("assistant", "rotated"))
    first = SessionIndexWorker(db, SessionIndexer(db, search), "process-1")
    assert await first.run_once()
    assert not await first.run_once()  # nothing new
    assert await checkpoint(db) == 2
    async with db.write() as s:  # the process stops: its lease is handed back
        await leases.release_all(s, "process-1")

    await log(db, sid, ("user", "and the redis timeout on prod"))  # while nobody follows
    index.written.clear()
    restarted = SessionIndexWorker(db, SessionIndexer(db, search), "process-2")
    assert await restarted.run_once()
    assert index.written == [f"session:{sid}:3"]  # from the checkpoint on, nothing twice
    assert await checkpoint(db) == 3
    assert await found(search, "redis") and await found(search, "certificate")


async def test_a_stream_of_events_is_indexed_in_batches_and_a_backlog_without_pauses(
    db: Database, tmp_path: Path
) -> None:
    index = RefusingIndex(tmp_path / "idx")
    worker = SessionIndexWorker(db, SessionIndexer(db, SearchService(index)), "w1", batch=2)
    sid = await task_session(db)
    await log(db, sid, ("user", "first of a stream"))
    assert await worker.run_once()
    assert worker.pause_after_work() == worker.pace > 0  # what comes next waits to be batched

    await log(db, sid, ("user", "second"), ("user", "third"), ("user", "fourth"))
    index.written.clear()
    assert await worker.run_once()
    assert index.written == [f"session:{sid}:2", f"session:{sid}:3"]
    assert worker.pause_after_work() == 0  # a full batch: more is waiting, no pause
    assert await worker.run_once()
    assert index.written[2:] == [f"session:{sid}:4"]
    assert worker.pause_after_work() == worker.pace
    assert await checkpoint(db) == 4


async def explicit(db: Database, session_id: int, event_id: int, text: str) -> None:
    """An event with a chosen id: a lower id written after higher ones is one that appears
    late (as a transaction that took its id first and committed last)."""
    async with db.write() as s:
        s.add(
            SessionEvent(
                id=event_id, session_id=session_id, seq=event_id, kind="user", text=text,
                created_at=utcnow(),
            )
        )  # fmt: skip


async def test_an_event_id_that_appears_late_is_indexed_and_a_missing_one_is_passed_over(
    db: Database, tmp_path: Path
) -> None:
    search, clock = SearchService(EmbeddedSearchIndex(tmp_path / "idx")), Clock()
    worker = SessionIndexWorker(db, SessionIndexer(db, search), "w1", gap_timeout=30, clock=clock)
    sid = await task_session(db)
    await explicit(db, sid, 1, "first words")
    await explicit(db, sid, 3, "third words")
    assert await worker.run_once()
    assert await checkpoint(db) == 1  # not past the id still missing
    await explicit(db, sid, 2, "latecomer words")
    assert await worker.run_once()
    assert await found(search, "latecomer")
    assert await checkpoint(db) == 3

    await explicit(db, sid, 5, "fifth words")  # 4 never comes (a rollback took it)
    assert await worker.run_once()
    assert await checkpoint(db) == 3
    clock.now += 31
    await worker.run_once()
    assert await checkpoint(db) == 5


async def test_an_event_committed_after_a_later_one_is_still_indexed(
    db: Database, tmp_path: Path
) -> None:
    if db.is_sqlite:
        pytest.skip("SQLite writes one at a time: ids appear in order")
    search = SearchService(EmbeddedSearchIndex(tmp_path / "idx"))
    worker = SessionIndexWorker(db, SessionIndexer(db, search), "w1")
    slow, quick = await task_session(db, "slow task"), await task_session(db, "quick task")
    late = db.sessions()  # takes its id, commits after the next event
    await sessions.append_events(late, slow, [("user", "slowpoke words", None)], utcnow())
    await log(db, quick, ("user", "quick words"))
    assert await worker.run_once()
    assert await found(search, "quick") and await checkpoint(db) == 0
    await late.commit()
    await late.close()
    assert await worker.run_once()
    assert await found(search, "slowpoke") and await checkpoint(db) == 2


async def test_search_rebuild_brings_back_messages_records_and_digests(
    db: Database, tmp_path: Path
) -> None:
    search = SearchService(EmbeddedSearchIndex(tmp_path / "idx"))
    sid = await task_session(db)
    await log(db, sid, ("user", "nightly export takes 14 minutes"), ("assistant", "profiling"))
    async with db.write() as s:
        await source_records.insert_records(
            s,
            [
                NewRecord(
                    source="email:INBOX", external_id="m1", scope="mail:INBOX",
                    text="Hengda is our packaging supplier", title="supplier",
                    sent_at=datetime(2024, 5, 1, tzinfo=UTC),
                )
            ],
            utcnow(),
        )  # fmt: skip
    await record_completion(db, Notifier(), sid, "turn-1")
    model = ModelClient(
        ScriptedProvider([ScriptedProvider.text("Nightly export speed work.")]), MemoryRecorder()
    )
    assert await SummaryWorker(db, model, search, "w1").run_once()  # writes the digest
    assert await SessionIndexWorker(db, SessionIndexer(db, search), "w1").run_once()
    source_worker = SourceIndexWorker(db, SourceIndexer(db, search), "w1")
    assert await source_worker.run_once()
    digests = SearchFilters(kinds=["session_digest"], session_ids=[str(sid)])
    before = await search.search("nightly export", digests)
    assert before

    await search.index.clear()
    assert not await search.search("nightly export")
    done = await rebuild(db, search, tool_output=False)

    assert (done.session_messages, done.source_records, done.digests) == (2, 1, 1)
    [message] = await found(search, "14 minutes")
    assert (message.session_id, message.scope) == (str(sid), "group:oc_staging_deploys")
    assert await search.search("Hengda", SearchFilters(kinds=["source_mail"]))
    [digest] = await search.search("speed", digests)  # a word only the summary has
    assert digest.id == before[0].id == f"session-digest:{sid}"
