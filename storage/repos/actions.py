"""The actions ledger (bot/actions/ decides; this reads and writes the rows).

Every change of state is one conditional UPDATE (`WHERE state = <the state it leaves>`), so
two clicks, two replicas or a click racing the expiry sweep move a row once: the second
finds it already moved and says what happened instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from storage.claims import NOW, claim, probe
from storage.models import Action, ActionPermission

PROPOSED, APPROVED, REJECTED, EXPIRED = "proposed", "approved", "rejected", "expired"
RUNNING, DONE, FAILED = "running", "done", "failed"
STATES = (PROPOSED, APPROVED, REJECTED, EXPIRED, RUNNING, DONE, FAILED)


async def add(
    tx: AsyncSession,
    *,
    kind: str,
    params: dict[str, Any],
    summary: str,
    requester: str,
    conversation_id: int | None,
    reason: str,
    expires_at: datetime,
    now: datetime,
    request_key: str | None = None,
) -> Action:
    row = Action(
        kind=kind,
        request_key=request_key,
        params=params,
        summary=summary,
        requester=requester,
        conversation_id=conversation_id,
        reason=reason,
        state=PROPOSED,
        expires_at=expires_at,
        attempts=0,
        created_at=now,
    )
    tx.add(row)
    await tx.flush()
    return row


async def get(tx: AsyncSession, action_id: int) -> Action | None:
    return await tx.get(Action, action_id, populate_existing=True)


async def by_request(tx: AsyncSession, request_key: str) -> Action | None:
    return await tx.scalar(select(Action).where(Action.request_key == request_key))


async def decide(
    tx: AsyncSession,
    action_id: int,
    *,
    to: str,
    by: str,
    now: datetime,
    permission_id: int | None = None,
) -> bool:
    """proposed → approved | rejected, once and only before it expires; False when the row
    was not proposed any more (or had expired: the caller reads the row to say which)."""
    values: dict[str, Any] = {"state": to, "decided_by": by, "decided_at": now}
    if to == APPROVED:
        values |= {"next_attempt_at": now, "permission_id": permission_id}
    result = await tx.execute(
        update(Action)
        .where(Action.id == action_id, Action.state == PROPOSED, Action.expires_at > now)
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    return bool(getattr(result, "rowcount", 0))


async def expire_overdue(tx: AsyncSession, now: datetime) -> int:
    """The sweep: proposals past their expiry become `expired`; how many."""
    result = await tx.execute(
        update(Action)
        .where(Action.state == PROPOSED, Action.expires_at <= now)
        .values(state=EXPIRED, finished_at=now)
        .execution_options(synchronize_session=False)
    )
    return int(getattr(result, "rowcount", 0) or 0)


# Approved rows, and running ones whose runner is gone (a crash between the call and its
# record): the same key again, so the platform de-duplicates.
_DUE = [Action.state.in_((APPROVED, RUNNING)), Action.next_attempt_at <= NOW]
_HAS_DUE = probe(Action, _DUE)
_CLAIM_DUE = claim(
    Action,
    _DUE,
    [Action.next_attempt_at, Action.id],
    also={"state": RUNNING, "attempts": Action.attempts + 1},
)


async def has_due(tx: AsyncSession, now: datetime) -> bool:
    return await _HAS_DUE.finds(tx, now=now)


async def claim_due(
    tx: AsyncSession, *, owner: str, now: datetime, limit: int, lease: timedelta
) -> list[Action]:
    return await _CLAIM_DUE.take(tx, limit=limit, owner=owner, lease=lease, now=now)


async def next_due_at(tx: AsyncSession) -> datetime | None:
    return await tx.scalar(
        select(func.min(Action.next_attempt_at)).where(Action.state.in_((APPROVED, RUNNING)))
    )


async def finish(
    tx: AsyncSession,
    action_id: int,
    owner: str,
    *,
    state: str,
    now: datetime,
    result: str | None = None,
    error: str | None = None,
) -> bool:
    """running → done | failed by the lease holder; False when the claim was lost."""
    outcome = await tx.execute(
        update(Action)
        .where(Action.id == action_id, Action.lease_owner == owner, Action.state == RUNNING)
        .values(
            state=state,
            result=result[:2000] if result else None,
            last_error=error[:2000] if error else None,
            finished_at=now,
            next_attempt_at=None,
            lease_owner=None,
            lease_expires_at=None,
        )
        .execution_options(synchronize_session=False)
    )
    return bool(getattr(outcome, "rowcount", 0))


async def retry_later(
    tx: AsyncSession, action_id: int, owner: str, *, at: datetime, error: str
) -> None:
    await tx.execute(
        update(Action)
        .where(Action.id == action_id, Action.lease_owner == owner)
        .values(
            state=APPROVED,  # approved, waiting for its next try
            next_attempt_at=at,
            last_error=error[:2000],
            lease_owner=None,
            lease_expires_at=None,
        )
        .execution_options(synchronize_session=False)
    )


async def count_since(tx: AsyncSession, kind: str, since: datetime) -> int:
    """Actions of `kind` proposed since `since` (the per-day cap counts every proposal)."""
    stmt = select(func.count(Action.id)).where(Action.kind == kind, Action.created_at >= since)
    return int(await tx.scalar(stmt) or 0)


async def recent(
    tx: AsyncSession, conversation_id: int | None, limit: int = 20
) -> Sequence[Action]:
    """The latest actions: all of them (None), or those asked for in one conversation."""
    stmt = select(Action).order_by(Action.id.desc()).limit(limit)
    if conversation_id is not None:
        stmt = stmt.where(Action.conversation_id == conversation_id)
    return (await tx.scalars(stmt)).all()


async def count_by_state(tx: AsyncSession) -> dict[str, int]:
    rows = await tx.execute(select(Action.state, func.count(Action.id)).group_by(Action.state))
    return {state: int(n) for state, n in rows.all()}


# ---- standing permissions ------------------------------------------------------------------


async def allow(
    tx: AsyncSession, *, kind: str, conversation_id: int | None, by: str, now: datetime
) -> tuple[ActionPermission, bool]:
    """The standing permission for `kind` there; True when it is new."""
    held = await permission_for(tx, kind, conversation_id, exact=True)
    if held is not None:
        return held, False
    row = ActionPermission(
        kind=kind, conversation_id=conversation_id, granted_by=by, created_at=now
    )
    tx.add(row)
    await tx.flush()
    return row, True


async def permission_for(
    tx: AsyncSession, kind: str, conversation_id: int | None, *, exact: bool = False
) -> ActionPermission | None:
    """The live permission for `kind` in `conversation_id` (exact), or also an everywhere one
    (not exact; the chat's own first)."""
    where = [ActionPermission.kind == kind, ActionPermission.revoked_at.is_(None)]
    if exact or conversation_id is None:
        where.append(
            ActionPermission.conversation_id.is_(None)
            if conversation_id is None
            else ActionPermission.conversation_id == conversation_id
        )
    else:
        where.append(
            or_(
                ActionPermission.conversation_id == conversation_id,
                ActionPermission.conversation_id.is_(None),
            )
        )
    stmt = (
        select(ActionPermission)
        .where(*where)
        .order_by(ActionPermission.conversation_id.is_(None), ActionPermission.id)
        .limit(1)
    )
    return await tx.scalar(stmt)


async def permissions(tx: AsyncSession) -> Sequence[ActionPermission]:
    stmt = (
        select(ActionPermission)
        .where(ActionPermission.revoked_at.is_(None))
        .order_by(ActionPermission.id)
    )
    return (await tx.scalars(stmt)).all()


async def revoke(tx: AsyncSession, permission_id: int, now: datetime) -> bool:
    result = await tx.execute(
        update(ActionPermission)
        .where(ActionPermission.id == permission_id, ActionPermission.revoked_at.is_(None))
        .values(revoked_at=now)
        .execution_options(synchronize_session=False)
    )
    return bool(getattr(result, "rowcount", 0))


async def note_result(tx: AsyncSession, action_id: int, result: str) -> None:
    """What a running action already did (a document it created), kept on the row so that a
    run again after a crash finds it and does not do it twice; `finish` replaces it."""
    await tx.execute(
        update(Action)
        .where(Action.id == action_id, Action.state == RUNNING)
        .values(result=result[:2000])
        .execution_options(synchronize_session=False)
    )
