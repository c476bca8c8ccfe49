"""Sessions and their append-only event logs."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import Select, func, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import Conversation, Session, SessionEvent, SessionSummary

COORDINATION = "coordination"


async def coordination_for(
    tx: AsyncSession, conversation_id: int, *, name: str, now: datetime
) -> Session:
    """The conversation's own Session (where the Bot's turns are logged), made on first use."""
    existing = await tx.scalar(
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
    tx.add(created)
    await tx.flush()
    return created


async def append_events(
    tx: AsyncSession,
    session_id: int,
    events: list[tuple[str, str, dict[str, Any] | None]],
    now: datetime,
) -> None:
    """Append (kind, text, payload) events with the next sequence numbers, in one statement."""
    last = await tx.scalar(
        select(func.coalesce(func.max(SessionEvent.seq), 0)).where(
            SessionEvent.session_id == session_id
        )
    )
    rows = [
        {
            "session_id": session_id,
            "seq": int(last or 0) + i + 1,
            "kind": kind,
            "text": text,
            "payload": payload,
            "created_at": now,
        }
        for i, (kind, text, payload) in enumerate(events)
    ]
    if rows:
        await tx.execute(insert(SessionEvent), rows)


async def events_after(
    tx: AsyncSession, session_id: int, after_seq: int, kinds: tuple[str, ...]
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
    return list((await tx.scalars(stmt)).all())


async def latest_event(tx: AsyncSession, session_id: int, kind: str) -> SessionEvent | None:
    return await tx.scalar(
        select(SessionEvent)
        .where(SessionEvent.session_id == session_id, SessionEvent.kind == kind)
        .order_by(SessionEvent.seq.desc())
        .limit(1)
    )


async def touch(tx: AsyncSession, session_id: int, now: datetime) -> None:
    stmt = update(Session).where(Session.id == session_id).values(last_message_at=now)
    await tx.execute(stmt.execution_options(synchronize_session=False))


async def recent_events(
    tx: AsyncSession, session_id: int, kinds: tuple[str, ...], up_to_seq: int, limit: int
) -> list[SessionEvent]:
    """The newest `limit` events of these kinds up to `up_to_seq`, oldest first."""
    stmt = (
        select(SessionEvent)
        .where(
            SessionEvent.session_id == session_id,
            SessionEvent.seq <= up_to_seq,
            SessionEvent.kind.in_(kinds),
        )
        .order_by(SessionEvent.seq.desc())
        .limit(limit)
    )
    return list(reversed((await tx.scalars(stmt)).all()))


# ---- every Session's log, in id order (the search follower and `maka search rebuild`) ------


class LoggedEvent(NamedTuple):
    """An event with its Session and the conversation the Session belongs to, if any."""

    event: SessionEvent
    header: Session
    conversation: Conversation | None


def _logged() -> Select[SessionEvent, Session, Conversation]:
    return (
        select(SessionEvent, Session, Conversation)
        .join(Session, Session.id == SessionEvent.session_id)
        .outerjoin(Conversation, Conversation.id == Session.conversation_id)
    )


async def logged_after(
    tx: AsyncSession, after_id: int, limit: int, kinds: Sequence[str] | None = None
) -> list[LoggedEvent]:
    """Events of every Session with an id above `after_id`, in id order."""
    stmt = _logged().where(SessionEvent.id > after_id)
    if kinds is not None:
        stmt = stmt.where(SessionEvent.kind.in_(list(kinds)))
    rows = await tx.execute(stmt.order_by(SessionEvent.id).limit(limit))
    return [LoggedEvent(event, header, conv) for event, header, conv in rows.all()]


async def logged_between(
    tx: AsyncSession, ranges: Sequence[tuple[int, int]], limit: int
) -> list[LoggedEvent]:
    """Events whose id lies in any of the inclusive `ranges` (gaps that filled in later)."""
    if not ranges:
        return []
    stmt = (
        _logged()
        .where(or_(*(SessionEvent.id.between(first, last) for first, last in ranges)))
        .order_by(SessionEvent.id)
        .limit(limit)
    )
    rows = await tx.execute(stmt)
    return [LoggedEvent(event, header, conv) for event, header, conv in rows.all()]


async def max_event_id(tx: AsyncSession) -> int:
    return int(await tx.scalar(select(func.max(SessionEvent.id))) or 0)


async def summarized_after(
    tx: AsyncSession, after_id: int, limit: int
) -> list[tuple[Session, SessionSummary]]:
    """Sessions with a stored summary, by id after `after_id` (to write their digests again)."""
    rows = await tx.execute(
        select(Session, SessionSummary)
        .join(SessionSummary, SessionSummary.session_id == Session.id)
        .where(Session.id > after_id, SessionSummary.text.is_not(None))
        .order_by(Session.id)
        .limit(limit)
    )
    return [(header, summary) for header, summary in rows.all()]
