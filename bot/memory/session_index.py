"""Session logs in the search index: user and assistant messages, one document per message,
with the Session id and the conversation's scope. Raw tool output stays out unless asked
for (MAKA_INDEX_TOOL_OUTPUT), because it is noisy and may quote things the user never saw.

Nothing indexes an event inline: whatever appends to a Session's log notifies `TOPIC` after
its commit, and `SessionIndexWorker` (a `bot.memory.follower` follower, like the one for
source records) follows `session_events` by id with a checkpoint in the source row
`index:sessions`. A write the search backend refuses is retried, never lost; `maka search
rebuild` calls `SessionIndexer.rebuild`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from bot.memory.follower import GAP_TIMEOUT, LEASE, PACE, Follower
from bot.memory.search import SearchService
from bot.workhub.digests import digests_of
from sources.feishu.records import chat_scope
from storage.db import Database
from storage.models import Session, SessionEvent
from storage.repos import sessions as repo
from storage.repos.redactions import REDACTION
from storage.repos.sessions import LoggedEvent
from storage.search import SearchDocument

MESSAGE_KINDS = ("user", "assistant")
TOOL_KINDS = ("tool_result",)
BATCH = 500
TOPIC = repo.SESSION_INDEX_TOPIC  # notified after a commit that appended events to a log
INDEX_SOURCE = "index:sessions"  # the follower's source row: its checkpoint and errors
INDEX_LEASE = "sessions.index"


class ChatLike(Protocol):
    """What a conversation's scope is made of (a stored row or a turn's view of it)."""

    @property
    def chat_id(self) -> str: ...
    @property
    def chat_type(self) -> str: ...
    @property
    def peer_open_id(self) -> str | None: ...


def conversation_scope(conversation: ChatLike | None) -> str | None:
    """The search scope of a conversation's messages and Session logs (`dm:<peer>` or
    `group:<chat_id>`, as its synced history is scoped)."""
    if conversation is None:
        return None
    return chat_scope(conversation.chat_type, conversation.chat_id, conversation.peer_open_id)


def event_document(event: SessionEvent, header: Session, scope: str | None) -> SearchDocument:
    """An event's document; a REDACTION's is the redacted event's, with its text now (a
    message taken back: storage/repos/redactions.py `redact_item`)."""
    seq, kind = event.seq, event.kind
    if kind == REDACTION and isinstance(event.payload, dict):
        seq = int(event.payload.get("redacts") or 0)
        kind = str(event.payload.get("kind") or "user")
    return SearchDocument(
        id=f"session:{event.session_id}:{seq}",
        kind=f"session_{kind}",
        text=event.text,
        title=header.name,
        session_id=str(event.session_id),
        scope=scope,
        time=event.created_at,
    )


class SessionIndexer:
    def __init__(self, db: Database, search: SearchService, *, tool_output: bool = False) -> None:
        self.db = db
        self.search = search
        self.kinds = MESSAGE_KINDS + (TOOL_KINDS if tool_output else ())

    def documents(self, rows: Sequence[LoggedEvent]) -> list[SearchDocument]:
        """The documents of the events of an indexed kind (the rest are skipped)."""
        return [
            event_document(row.event, row.header, conversation_scope(row.conversation))
            for row in rows
            if row.event.kind in self.kinds or _redacts(row.event)
        ]

    async def index(self, rows: Sequence[LoggedEvent]) -> bool:
        if not await self.search.upsert(self.documents(rows)):
            return False
        # A redaction took words out of these Sessions: their digests are written again from
        # what is stored now (the summary, if dropped, with them; the worker makes it anew).
        redacted = sorted({row.event.session_id for row in rows if row.event.kind == REDACTION})
        if not redacted:
            return True
        async with self.db.read() as tx:
            docs, gone = await digests_of(tx, redacted)
        return await self.search.upsert(docs) and await self.search.delete(gone)

    async def rebuild(self) -> int:
        """Index every stored session message again (after a backend change or lost writes)."""
        count, last_id = 0, 0
        while True:
            async with self.db.read() as tx:
                rows = await repo.logged_after(tx, last_id, BATCH, self.kinds)
            if not rows:
                return count
            last_id = rows[-1].event.id
            docs = self.documents(rows)
            if not await self.search.upsert(docs):
                raise RuntimeError("the search backend refused documents; see the log")
            count += len(docs)


def _redacts(event: SessionEvent) -> bool:
    """A REDACTION that replaces an event's text (not one that only drops a digest)."""
    return (
        event.kind == REDACTION
        and isinstance(event.payload, dict)
        and bool(event.payload.get("redacts"))
    )


class SessionIndexWorker(Follower[LoggedEvent]):
    """Follows `session_events` by id and indexes the events of the indexed kinds. It reads
    every kind, so an event it skips is no gap."""

    name = "session-index"
    topics = (TOPIC,)
    checkpoint_source = INDEX_SOURCE
    lease_name = INDEX_LEASE
    title = "search index of Session logs"
    unit = "session events"

    def __init__(
        self,
        db: Database,
        indexer: SessionIndexer,
        owner: str,
        *,
        batch: int = BATCH,
        gap_timeout: float = GAP_TIMEOUT,
        lease: timedelta = LEASE,
        clock: Callable[[], float] = time.monotonic,
        pace: float = PACE,
    ) -> None:
        super().__init__(
            db, owner, batch=batch, gap_timeout=gap_timeout, lease=lease, clock=clock, pace=pace
        )
        self.indexer = indexer

    async def read_after(self, tx: AsyncSession, after: int, limit: int) -> Sequence[LoggedEvent]:
        return await repo.logged_after(tx, after, limit)

    async def read_between(
        self, tx: AsyncSession, ranges: Sequence[tuple[int, int]], limit: int
    ) -> Sequence[LoggedEvent]:
        return await repo.logged_between(tx, ranges, limit)

    def id_of(self, row: LoggedEvent) -> int:
        return row.event.id

    async def handle(self, rows: Sequence[LoggedEvent]) -> bool:
        return await self.indexer.index(rows)
