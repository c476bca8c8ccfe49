"""Session logs in the search index: user and assistant messages, one document per message,
with the Session id and the conversation's scope. Raw tool output stays out unless asked
for (MAKA_INDEX_TOOL_OUTPUT), because it is noisy and may quote things the user never saw.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol

from sqlalchemy import select

from bot.memory.search import SearchService
from sources.feishu_records import chat_scope
from storage.db import Database
from storage.models import Conversation, Session, SessionEvent
from storage.search import SearchDocument

MESSAGE_KINDS = ("user", "assistant")
TOOL_KINDS = ("tool_result",)
BATCH = 500


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


def event_document(event: SessionEvent, session: Session, scope: str | None) -> SearchDocument:
    return SearchDocument(
        id=f"session:{event.session_id}:{event.seq}",
        kind=f"session_{event.kind}",
        text=event.text,
        title=session.name,
        session_id=str(event.session_id),
        scope=scope,
        time=event.created_at,
    )


class SessionIndexer:
    def __init__(self, db: Database, search: SearchService, *, tool_output: bool = False) -> None:
        self.db = db
        self.search = search
        self.kinds = MESSAGE_KINDS + (TOOL_KINDS if tool_output else ())

    async def index_events(
        self, session: Session, scope: str | None, events: Sequence[SessionEvent]
    ) -> bool:
        docs = [event_document(e, session, scope) for e in events if e.kind in self.kinds]
        return await self.search.upsert(docs)

    async def rebuild(self) -> int:
        """Index every stored session message again (after a backend change or lost writes)."""
        count = 0
        async for docs in self._all_documents():
            if not await self.search.upsert(docs):
                raise RuntimeError("the search backend refused documents; see the log")
            count += len(docs)
        return count

    async def _all_documents(self) -> AsyncIterator[list[SearchDocument]]:
        last_id = 0
        while True:
            async with self.db.read() as s:
                rows = (
                    await s.execute(
                        select(SessionEvent, Session, Conversation)
                        .join(Session, Session.id == SessionEvent.session_id)
                        .outerjoin(Conversation, Conversation.id == Session.conversation_id)
                        .where(SessionEvent.id > last_id, SessionEvent.kind.in_(self.kinds))
                        .order_by(SessionEvent.id)
                        .limit(BATCH)
                    )
                ).all()
            if not rows:
                return
            last_id = rows[-1][0].id
            yield [event_document(e, s_, conversation_scope(c)) for e, s_, c in rows]
