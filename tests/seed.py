"""Rows tests start from: the owner's DM conversation, task Sessions in it, pending replies."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import Conversation, Matter, Session, SourceRecord
from storage.repos import outbox
from storage.types import utcnow

OWNER = "ou_owner"


async def owner_dm(s: AsyncSession, chat_id: str = "oc_owner_dm") -> Conversation:
    """The owner's DM (the one ingest would create for `chat_id`), made if missing."""
    conv = await s.scalar(select(Conversation).where(Conversation.chat_id == chat_id))
    if conv is None:
        conv = Conversation(
            platform="feishu",
            chat_id=chat_id,
            chat_type="p2p",
            peer_open_id=OWNER,
            listen_all=False,
            created_at=utcnow(),
        )
        s.add(conv)
        await s.flush()
    return conv


async def task_session(
    s: AsyncSession,
    conversation: Conversation,
    name: str,
    *,
    last_message_at: datetime | None = None,
    created_at: datetime | None = None,
    workspace: str | None = "infra",
) -> Session:
    now = utcnow()
    row = Session(
        name=name,
        workspace=workspace,
        state="active",
        labels=[],
        is_archived=False,
        conversation_id=conversation.id,
        created_by=OWNER,
        created_at=created_at or now,
        last_message_at=last_message_at or now,
    )
    s.add(row)
    await s.flush()
    return row


async def record_of(s: AsyncSession, source: str, external_id: str) -> SourceRecord | None:
    """A synced original by where it came from (the product looks records up by seq)."""
    return await s.scalar(
        select(SourceRecord).where(
            SourceRecord.source == source, SourceRecord.external_id == external_id
        )
    )


async def pending_reply(s: AsyncSession, chat_id: str, now: datetime, key: str = "") -> int | None:
    """A text reply "pong" to a Feishu chat, waiting in the outbox (its id; None if `key`,
    by default `reply-<chat_id>`, was enqueued before)."""
    return await outbox.enqueue(
        s,
        idempotency_key=key or f"reply-{chat_id}",
        platform="feishu",
        chat_id=chat_id,
        content_type="text",
        content={"text": "pong"},
        now=now,
    )


async def active_matter(s: AsyncSession, conversation: Conversation, requested_by: str) -> int:
    """An active Matter ("watch the deploy") on a task Session of its own, as a delegation
    leaves one: its id."""
    task = await task_session(s, conversation, "deploy")
    matter = Matter(
        session_id=task.id,
        conversation_id=conversation.id,
        requested_by=requested_by,
        objective="watch the deploy",
        amendments=[],
        wakes=[],
        work_record=[],
        status="active",
        created_at=utcnow(),
        updated_at=utcnow(),
    )
    s.add(matter)
    await s.flush()
    return matter.id
