"""The originals behind search hits: a synced record (chat message, mail) by its seq or by
(source, external id), and a Session event by (Session, seq)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import Conversation, Session, SessionEvent, SourceRecord


async def record(tx: AsyncSession, seq: int) -> SourceRecord | None:
    return await tx.get(SourceRecord, seq)


async def records_by_key(
    tx: AsyncSession, keys: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], SourceRecord]:
    """(source, external_id) -> the stored record, for the keys that are stored."""
    if not keys:
        return {}
    rows = await tx.scalars(
        select(SourceRecord).where(
            tuple_(SourceRecord.source, SourceRecord.external_id).in_(list(keys))
        )
    )
    return {(r.source, r.external_id): r for r in rows}


async def session_event(
    tx: AsyncSession, session_id: int, seq: int
) -> tuple[SessionEvent, Session, Conversation | None] | None:
    row = (
        await tx.execute(
            select(SessionEvent, Session, Conversation)
            .join(Session, Session.id == SessionEvent.session_id)
            .outerjoin(Conversation, Conversation.id == Session.conversation_id)
            .where(SessionEvent.session_id == session_id, SessionEvent.seq == seq)
        )
    ).first()
    return (row[0], row[1], row[2]) if row else None
