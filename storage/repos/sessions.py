"""Sessions and their append-only event logs."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import Session, SessionEvent

COORDINATION = "coordination"


async def coordination_for(
    session: AsyncSession, conversation_id: int, *, name: str, now: datetime
) -> Session:
    """The conversation's own Session (where the Bot's turns are logged), made on first use."""
    existing = await session.scalar(
        select(Session)
        .where(Session.conversation_id == conversation_id, Session.role == COORDINATION)
        .order_by(Session.id)
        .limit(1)
    )
    if existing is not None:
        return existing
    created = Session(
        name=name,
        role=COORDINATION,
        state="active",
        conversation_id=conversation_id,
        labels=[],
        is_archived=False,
        created_at=now,
        status_updated_at=now,
    )
    session.add(created)
    await session.flush()
    return created


async def append_events(
    session: AsyncSession,
    session_id: int,
    events: list[tuple[str, str, dict[str, Any] | None]],
    now: datetime,
) -> list[SessionEvent]:
    """Append (kind, text, payload) events with the next sequence numbers."""
    last = await session.scalar(
        select(func.coalesce(func.max(SessionEvent.seq), 0)).where(
            SessionEvent.session_id == session_id
        )
    )
    rows = [
        SessionEvent(
            session_id=session_id,
            seq=int(last or 0) + i + 1,
            kind=kind,
            text=text,
            payload=payload,
            created_at=now,
        )
        for i, (kind, text, payload) in enumerate(events)
    ]
    session.add_all(rows)
    await session.flush()
    return rows


async def events_after(
    session: AsyncSession, session_id: int, after_seq: int, kinds: tuple[str, ...]
) -> list[SessionEvent]:
    stmt = (
        select(SessionEvent)
        .where(
            SessionEvent.session_id == session_id,
            SessionEvent.seq > after_seq,
            SessionEvent.kind.in_(kinds),
        )
        .order_by(SessionEvent.seq)
    )
    return list((await session.scalars(stmt)).all())


async def latest_event(session: AsyncSession, session_id: int, kind: str) -> SessionEvent | None:
    return await session.scalar(
        select(SessionEvent)
        .where(SessionEvent.session_id == session_id, SessionEvent.kind == kind)
        .order_by(SessionEvent.seq.desc())
        .limit(1)
    )


async def touch(session: AsyncSession, session_id: int, now: datetime) -> None:
    row = await session.get(Session, session_id)
    if row is not None:
        row.last_message_at = now
