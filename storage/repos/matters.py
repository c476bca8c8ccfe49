"""Matters: adopting delegated Sessions, claiming runnable ones, recording settles, and the
one way a Matter's status changes (`set_status`), which the task Session's `state` follows."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, and_, exists, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from storage.claims import claim, probe
from storage.models import InboxItem, Matter, Session
from storage.repos._upsert import insert_for

ACTIVE, WAITING, PAUSED, COMPLETED, CANCELLED = (
    "active",
    "waiting",
    "paused",
    "completed",
    "cancelled",
)

# The task Session's `state` as its Matter's status says it: what routing shows the model
# (and hashes into the candidate set), so a finished task reads as done, not as active.
SESSION_STATE = {
    ACTIVE: "active",
    WAITING: "waiting",
    PAUSED: "blocked",  # stopped by an error or a person until resumed
    COMPLETED: "done",
    CANCELLED: "cancelled",
}
FINISHED_STATES = ("done", "cancelled")  # may be archived once quiet long enough


async def set_status(tx: AsyncSession, matter: Matter, status: str, now: datetime) -> None:
    """Change a Matter's status, and its Session's state with it (a state change is a status
    update of the Session: `status_updated_at` moves; an unchanged state moves nothing)."""
    matter.status, matter.updated_at = status, now
    state = SESSION_STATE[status]
    await tx.execute(
        update(Session)
        .where(Session.id == matter.session_id, Session.state != state)
        .values(state=state, status_updated_at=now)
    )


def _unread_for_session() -> ColumnElement[bool]:
    return exists().where(
        InboxItem.session_id == Matter.session_id, InboxItem.delivered_at.is_(None)
    )


# Active work runs; new input also wakes a waiting or finished Matter (not a paused or
# cancelled one: a person stopped those).
_RUNNABLE = [
    or_(
        Matter.status == ACTIVE,
        and_(Matter.status.in_((WAITING, COMPLETED)), _unread_for_session()),
    )
]
_HAS_RUNNABLE = probe(Matter, _RUNNABLE)


async def has_runnable(tx: AsyncSession, now: datetime) -> bool:
    return await _HAS_RUNNABLE.finds(tx, now=now)


_CLAIM_RUNNABLE = claim(Matter, _RUNNABLE, [Matter.updated_at, Matter.id])


async def claim_runnable(
    tx: AsyncSession, *, owner: str, now: datetime, lease: timedelta
) -> Matter | None:
    """The next runnable Matter, claimed for a turn. A Matter at work is active: one woken
    by new input (done or waiting) becomes active here, so /matters and routing show it
    working again until its turn settles."""
    rows = await _CLAIM_RUNNABLE.take(tx, limit=1, owner=owner, lease=lease, now=now)
    if not rows:
        return None
    matter = rows[0]
    if matter.status != ACTIVE:
        await set_status(tx, matter, ACTIVE, now)
    return matter


async def cancelled_with_unread(tx: AsyncSession, limit: int = 20) -> list[int]:
    """Cancelled Matters with input nobody will read (handed over before the cancel was
    answered by it; left by an earlier version that did not)."""
    stmt = (
        select(Matter.id)
        .where(Matter.status == CANCELLED, _unread_for_session())
        .order_by(Matter.id)
        .limit(limit)
    )
    return list((await tx.scalars(stmt)).all())


async def sessions_to_adopt(tx: AsyncSession, limit: int = 20) -> list[int]:
    """Sessions with delegated input but no Matter yet."""
    stmt = (
        select(InboxItem.session_id)
        .where(
            InboxItem.session_id.is_not(None),
            InboxItem.delivered_at.is_(None),
            ~exists().where(Matter.session_id == InboxItem.session_id),
        )
        .group_by(InboxItem.session_id)
        .limit(limit)
    )
    return [int(sid) for sid in (await tx.scalars(stmt)).all() if sid is not None]


async def adopt(tx: AsyncSession, session_id: int, now: datetime) -> Matter | None:
    """The first delegated request becomes the objective (None if someone adopted it)."""
    first = await tx.scalar(
        select(InboxItem)
        .where(InboxItem.session_id == session_id, InboxItem.delivered_at.is_(None))
        .order_by(InboxItem.id)
        .limit(1)
    )
    if first is None:
        return None
    payload = first.payload
    stmt = (
        insert_for(tx, Matter.__table__)
        .values(
            session_id=session_id,
            conversation_id=payload.get("conversation_id"),
            requested_by=payload.get("from"),
            objective=str(payload.get("request") or payload.get("title") or ""),
            amendments=[],
            state_text="",
            status=ACTIVE,
            revision=0,
            wakes=[],
            work_record=[],
            run_count=0,
            rejection_count=0,
            created_at=now,
            updated_at=now,
        )
        .on_conflict_do_nothing(index_elements=["session_id"])
        .returning(Matter.__table__.c.id)
    )
    new_id = (await tx.execute(stmt)).scalar_one_or_none()
    return await tx.get(Matter, new_id) if new_id is not None else None


AMENDMENTS_KEEP = 50  # the newest amendments a Matter keeps (the full text stays in the inbox)


async def record_amendments(
    tx: AsyncSession, matter: Matter, read: list[InboxItem], now: datetime
) -> int:
    """Input handed to a Matter after the request that became its objective is an amendment
    (a change, an addition, a follow-up); the ones a settled turn read are added, once each.
    How many were new."""
    first = await tx.scalar(
        select(InboxItem.id)
        .where(InboxItem.session_id == matter.session_id)
        .order_by(InboxItem.id)
        .limit(1)
    )
    known = {a.get("item_id") for a in matter.amendments}
    new = [
        {
            "item_id": item.id,
            "at": item.created_at.isoformat(),
            "read_at": now.isoformat(),
            "text": str(item.payload.get("request") or item.payload.get("text") or ""),
        }
        for item in read
        if item.id != first and item.id not in known
    ]
    if new:
        matter.amendments = [*matter.amendments, *new][-AMENDMENTS_KEEP:]
    return len(new)


async def unread_items(tx: AsyncSession, session_id: int) -> list[InboxItem]:
    stmt = (
        select(InboxItem)
        .where(InboxItem.session_id == session_id, InboxItem.delivered_at.is_(None))
        .order_by(InboxItem.id)
    )
    return list((await tx.scalars(stmt)).all())


async def listing(
    tx: AsyncSession, *, conversation_id: int | None, limit: int = 20
) -> list[Matter]:
    """The most recently updated Matters, only those started in `conversation_id` unless it
    is None (the caller applies the visibility rule)."""
    stmt = select(Matter).order_by(Matter.updated_at.desc(), Matter.id.desc()).limit(limit)
    if conversation_id is not None:
        stmt = stmt.where(Matter.conversation_id == conversation_id)
    return list((await tx.scalars(stmt)).all())
