"""WorkHub's tables: completion notifications, Session summaries (routing writes are
`storage.repos.operations`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Select, func, literal_column, or_, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from storage.claims import claim, probe
from storage.models import (
    SESSION_ACTIVITY,
    TASK_CANDIDATE,
    Session,
    SessionCompletion,
    SessionSummary,
)
from storage.repos._upsert import insert_for

SIDE_CONVERSATION = "mode:side_conversation"


def by_activity(conversation_id: int | None, *, offset: int, limit: int) -> Select[Session]:
    """The candidates' page, in the partial index's very words (storage.models): a page
    reads `offset + limit` index entries, not every Session sorted."""
    stmt = select(Session).where(text(TASK_CANDIDATE))
    if conversation_id is not None:
        stmt = stmt.where(Session.conversation_id == conversation_id)
    activity: ColumnElement[Any] = literal_column(SESSION_ACTIVITY)
    return stmt.order_by(activity.desc(), Session.id.asc()).offset(offset).limit(limit)


async def sessions_by_activity(
    tx: AsyncSession,
    *,
    conversation_id: int | None,
    offset: int,
    limit: int,
) -> list[Session]:
    """Eligible-looking Sessions, most recent first, ties by id; only those started in
    `conversation_id` unless it is None (the caller applies the visibility rule; the label
    test is left to it too: JSON containment is not portable)."""
    stmt = by_activity(conversation_id, offset=offset, limit=limit)
    return list((await tx.scalars(stmt)).all())


async def archive_quiet(tx: AsyncSession, states: Sequence[str], quiet_since: datetime) -> int:
    """Archive the task Sessions in one of `states` with no activity since `quiet_since`
    (they stop being routing candidates); how many."""
    activity = func.coalesce(Session.last_message_at, Session.status_updated_at, Session.created_at)
    result = await tx.execute(
        update(Session)
        .where(
            Session.is_archived.is_(False),
            Session.role.is_(None),
            Session.state.in_(list(states)),
            activity < quiet_since,
        )
        .values(is_archived=True)
        .execution_options(synchronize_session=False)
    )
    return int(getattr(result, "rowcount", 0) or 0)


async def summaries_for(tx: AsyncSession, ids: Sequence[int]) -> dict[int, str]:
    rows = await tx.execute(
        select(SessionSummary.session_id, SessionSummary.text).where(
            SessionSummary.session_id.in_(ids), SessionSummary.text.is_not(None)
        )
    )
    return {int(sid): str(text) for sid, text in rows.all()}


@dataclass(frozen=True)
class Completion:
    count: int  # completed turns so far
    refresh: bool  # a summary refresh was asked for (a 1, 2, 4, 8 … point, or a stale one)


async def record_completion(
    tx: AsyncSession, session_id: int, key: str, now: datetime
) -> Completion | None:
    """Count a completed turn; None when this notification was counted before (a repeated
    terminal notification does not count twice)."""
    added = await tx.execute(
        insert_for(tx, SessionCompletion)
        .values(session_id=session_id, completion_key=key, created_at=now)
        .on_conflict_do_nothing(index_elements=["session_id", "completion_key"])
        .returning(SessionCompletion.session_id)
    )
    if added.scalar_one_or_none() is None:
        return None
    await tx.execute(
        insert_for(tx, SessionSummary)
        .values(
            session_id=session_id,
            covered_seq=0,
            completion_count=0,
            requested_at_count=0,
            summarized_at_count=0,
            stale=False,
        )
        .on_conflict_do_nothing(index_elements=["session_id"])
    )
    row = await tx.get(SessionSummary, session_id, with_for_update=True)
    assert row is not None
    row.completion_count += 1
    power_of_two = row.completion_count & (row.completion_count - 1) == 0  # 1, 2, 4, 8, ...
    refresh = power_of_two or row.stale
    if refresh:
        row.requested_at_count, row.stale = row.completion_count, False
    await tx.flush()
    return Completion(row.completion_count, refresh)


async def mark_stale(tx: AsyncSession, session_id: int) -> bool:
    """The summary no longer says what the task is about; False when there is none."""
    result = await tx.execute(
        update(SessionSummary)
        .where(SessionSummary.session_id == session_id, SessionSummary.text.is_not(None))
        .values(stale=True)
    )
    return bool(getattr(result, "rowcount", 0))


_REFRESH_PENDING = SessionSummary.requested_at_count > SessionSummary.summarized_at_count


_HAS_REFRESH = probe(SessionSummary, [_REFRESH_PENDING])


async def has_refresh(tx: AsyncSession, now: datetime) -> bool:
    return await _HAS_REFRESH.finds(tx, now=now)


_CLAIM_REFRESH = claim(SessionSummary, [_REFRESH_PENDING], [SessionSummary.session_id])


async def claim_refresh(
    tx: AsyncSession, *, owner: str, now: datetime, lease: timedelta
) -> SessionSummary | None:
    rows = await _CLAIM_REFRESH.take(tx, limit=1, owner=owner, lease=lease, now=now)
    return rows[0] if rows else None


async def store_summary(
    tx: AsyncSession,
    session_id: int,
    owner: str,
    *,
    text: str,
    covered_seq: int,
    for_count: int,
    now: datetime,
) -> bool:
    """Write a generation unless a newer one is already stored (never go back in
    covered_seq). Touches nothing but the summary row."""
    result = await tx.execute(
        update(SessionSummary)
        .where(
            SessionSummary.session_id == session_id,
            SessionSummary.covered_seq <= covered_seq,
            or_(SessionSummary.lease_owner == owner, SessionSummary.lease_owner.is_(None)),
        )
        .values(
            text=text,
            covered_seq=covered_seq,
            generated_at=now,
            last_error=None,
            summarized_at_count=func.max(SessionSummary.summarized_at_count, for_count)
            if tx.get_bind().dialect.name == "sqlite"
            else func.greatest(SessionSummary.summarized_at_count, for_count),
            lease_owner=None,
            lease_expires_at=None,
        )
    )
    return bool(getattr(result, "rowcount", 0))


async def settle_refresh(tx: AsyncSession, session_id: int, owner: str, for_count: int) -> None:
    """Nothing new to summarize: the refresh is done without a new text."""
    await tx.execute(
        update(SessionSummary)
        .where(SessionSummary.session_id == session_id, SessionSummary.lease_owner == owner)
        .values(lease_owner=None, lease_expires_at=None, summarized_at_count=for_count)
    )


async def postpone_refresh(
    tx: AsyncSession, session_id: int, owner: str, *, error: str, retry_at: datetime
) -> None:
    """The refresh failed: it stays pending, and its lease keeps it from being retried
    before `retry_at`."""
    await tx.execute(
        update(SessionSummary)
        .where(SessionSummary.session_id == session_id, SessionSummary.lease_owner == owner)
        .values(last_error=error[:2000], lease_owner="retry-later", lease_expires_at=retry_at)
    )
