"""Sessions and their append-only event logs."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple, cast

from sqlalchemy import (
    Integer,
    Select,
    String,
    Table,
    Text,
    bindparam,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import Conversation, Session, SessionEvent, SessionSummary
from storage.repos._lists import in_list
from storage.types import JSONType, UTCDateTime

COORDINATION = "coordination"
# Woken after a commit that appended events (the search follower of Session logs).
SESSION_INDEX_TOPIC = "session-index"

# Every Bot turn runs these: built once, on the tables (not the ORM entities, whose loading
# and bulk-DML paths cost more than the statements), bound per call.
_SESSIONS = cast(Table, Session.__table__)
_EVENTS = cast(Table, SessionEvent.__table__)
_NEW_COORDINATION = (
    insert(_SESSIONS)
    .values(
        name=bindparam("session_name", type_=String()),
        role=COORDINATION,
        state="active",
        conversation_id=bindparam("conversation_id", type_=Integer()),
        labels=[],
        is_archived=False,
        created_at=bindparam("now", type_=UTCDateTime()),
        # Not `now` again: see `outbox._DUE_NOW`.
        status_updated_at=bindparam("status_at", type_=UTCDateTime()),
    )
    .returning(_SESSIONS.c.id)
)
_CONVERSATIONS = cast(Table, Conversation.__table__)
_POINT_TO_COORDINATION = (
    update(_CONVERSATIONS)
    .where(_CONVERSATIONS.c.id == bindparam("conversation_id", type_=Integer()))
    .values(coordination_session_id=bindparam("session_id", type_=Integer()))
)
# One event with the Session's next seq, found by the insert itself (not a read before it):
# run once per event (executemany), each run sees the one before it.
_NEXT_EVENT = insert(_EVENTS).from_select(
    ["session_id", "seq", "kind", "text", "payload", "created_at"],
    select(
        bindparam("session_id", type_=Integer()),
        func.coalesce(func.max(_EVENTS.c.seq), 0) + 1,
        bindparam("kind", type_=String()),
        bindparam("text", type_=Text()),
        bindparam("payload", type_=JSONType),
        bindparam("created_at", type_=UTCDateTime()),
    ).where(_EVENTS.c.session_id == bindparam("session_id", type_=Integer())),
)
_TOUCH = (
    update(_SESSIONS)
    .where(_SESSIONS.c.id == bindparam("session_id", type_=Integer()))
    .values(last_message_at=bindparam("now", type_=UTCDateTime()))
)


class Event(NamedTuple):
    """A logged event as read on the hot path (the columns of `SessionEvent`)."""

    id: int
    session_id: int
    seq: int
    kind: str
    text: str
    payload: dict[str, Any] | None
    created_at: datetime


_EVENT_COLUMNS = [_EVENTS.c[f] for f in Event._fields]
_AFTER = (
    select(*_EVENT_COLUMNS)
    .where(
        _EVENTS.c.session_id == bindparam("session_id", type_=Integer()),
        _EVENTS.c.seq > bindparam("after_seq", type_=Integer()),
        in_list(_EVENTS.c.kind, "kinds"),
    )
    .order_by(_EVENTS.c.seq)
)


# A Bot turn's memory of its conversation (bot/assistant/history.py) in one statement, not
# two: the latest summary, and the turns after what it covers. A summary is logged after the
# turns it covers, so it lies in that range itself (with, at times, older summaries).
_SUMMARY = "summary"
_SUMMARIES = _EVENTS.alias("summaries")  # not the outer query's table: no correlation
_LATEST_SUMMARY = (
    select(_SUMMARIES.c.payload["covered_seq"].as_integer())
    .where(
        _SUMMARIES.c.session_id == bindparam("session_id", type_=Integer()),
        _SUMMARIES.c.kind == _SUMMARY,
    )
    .order_by(_SUMMARIES.c.seq.desc())
    .limit(1)
    .scalar_subquery()
)
_SINCE_SUMMARY = (
    select(*_EVENT_COLUMNS)
    .where(
        _EVENTS.c.session_id == bindparam("session_id", type_=Integer()),
        _EVENTS.c.seq > func.coalesce(_LATEST_SUMMARY, 0),
        in_list(_EVENTS.c.kind, "kinds"),
    )
    .order_by(_EVENTS.c.seq)
)


async def since_summary(
    tx: AsyncSession, session_id: int, kinds: tuple[str, ...]
) -> tuple[Event | None, list[Event]]:
    """The Session's latest `summary` event (None if there is none yet) and its events of
    `kinds` after the seq the summary's payload says it covers (`covered_seq`), in order."""
    rows = [
        Event(*row)
        for row in await tx.execute(
            _SINCE_SUMMARY, {"session_id": session_id, "kinds": [*kinds, _SUMMARY]}
        )
    ]
    summaries = [row for row in rows if row.kind == _SUMMARY]
    return (summaries[-1] if summaries else None), [row for row in rows if row.kind != _SUMMARY]


async def new_coordinations(
    tx: AsyncSession, conversations: Sequence[tuple[int, str]], now: datetime
) -> dict[int, int]:
    """Make each conversation's own Session (where the Bot's turns are logged), named as
    given, and point the conversation at it (`coordination_session_id`, read with the
    conversation by each turn: the Session is found without a query of its own), in two
    statements for all: conversation id -> its new Session's id. Only by the turns holding
    the conversations' leases, so never twice."""
    if not conversations:
        return {}
    rows = [
        {"conversation_id": c, "session_name": name, "now": now, "status_at": now}
        for c, name in conversations
    ]
    made = await tx.execute(
        _NEW_COORDINATION.returning(_SESSIONS.c.conversation_id),
        rows,
    )
    sessions = {int(conversation): int(session) for session, conversation in made}
    points = [{"conversation_id": c, "session_id": s} for c, s in sessions.items()]
    await tx.execute(_POINT_TO_COORDINATION, points)
    return sessions


async def append_events(
    tx: AsyncSession,
    session_id: int,
    events: list[tuple[str, str, dict[str, Any] | None]],
    now: datetime,
) -> None:
    """Append (kind, text, payload) events with the next sequence numbers."""
    rows = [
        {
            "session_id": session_id,
            "kind": kind,
            "text": text,
            "payload": payload,
            "created_at": now,
        }
        for kind, text, payload in events
    ]
    if rows:
        await tx.execute(_NEXT_EVENT, rows)


async def events_after(
    tx: AsyncSession, session_id: int, after_seq: int, kinds: tuple[str, ...]
) -> list[Event]:
    bound = {"session_id": session_id, "after_seq": after_seq, "kinds": list(kinds)}
    return [Event(*row) for row in await tx.execute(_AFTER, bound)]


async def log_each(
    tx: AsyncSession,
    logs: Sequence[tuple[int, list[tuple[str, str, dict[str, Any] | None]]]],
    now: datetime,
) -> None:
    """`append_events` of several Sessions (id, events), with their `last_message_at` set,
    one executemany each."""
    rows = [
        {"session_id": sid, "kind": kind, "text": text, "payload": payload, "created_at": now}
        for sid, events in logs
        for kind, text, payload in events
    ]
    if not rows:
        return
    await tx.execute(_NEXT_EVENT, rows)
    await tx.execute(_TOUCH, [{"session_id": sid, "now": now} for sid in dict(logs)])


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
