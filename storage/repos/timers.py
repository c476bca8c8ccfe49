"""Persisted timers: wake-ups that must fire once, also across restarts and replicas."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from storage.claims import NOW, claim, probe
from storage.models import Timer

PENDING, FIRED, FAILED = "pending", "fired", "failed"


async def schedule(
    tx: AsyncSession, *, kind: str, key: str, due_at: datetime, payload: dict[str, Any]
) -> Timer:
    """Set the wake for `key` (one per key): a new key adds it, a known key moves it."""
    timer = await tx.scalar(select(Timer).where(Timer.key == key).with_for_update())
    if timer is None:
        timer = Timer(kind=kind, key=key, due_at=due_at, payload=payload, state=PENDING)
        tx.add(timer)
    else:
        timer.kind, timer.due_at, timer.payload = kind, due_at, payload
        timer.state, timer.attempts, timer.last_error, timer.fired_at = PENDING, 0, None, None
    await tx.flush()
    return timer


async def cancel(tx: AsyncSession, key: str) -> bool:
    result = await tx.execute(
        update(Timer).where(Timer.key == key, Timer.state == PENDING).values(state="cancelled")
    )
    return bool(getattr(result, "rowcount", 0))


_DUE = [Timer.state == PENDING, Timer.due_at <= NOW]
_HAS_DUE = probe(Timer, _DUE)


async def has_due(tx: AsyncSession, now: datetime) -> bool:
    return await _HAS_DUE.finds(tx, now=now)


_CLAIM_DUE = claim(Timer, _DUE, [Timer.due_at, Timer.id])


async def claim_due(
    tx: AsyncSession, *, owner: str, now: datetime, limit: int, lease: timedelta
) -> list[Timer]:
    return await _CLAIM_DUE.take(tx, limit=limit, owner=owner, lease=lease, now=now)


async def mark_fired(tx: AsyncSession, timer_id: int, owner: str, now: datetime) -> bool:
    """Only the lease holder may fire; False means the claim was lost (lease expired)."""
    result = await tx.execute(
        update(Timer)
        .where(Timer.id == timer_id, Timer.lease_owner == owner, Timer.state == PENDING)
        .values(state=FIRED, fired_at=now, lease_owner=None, lease_expires_at=None)
    )
    return bool(getattr(result, "rowcount", 0))


async def record_failure(
    tx: AsyncSession,
    timer_id: int,
    owner: str,
    *,
    error: str,
    retry_at: datetime | None,
) -> None:
    """A failed firing is retried at `retry_at`, or given up (state failed) when None."""
    values: dict[str, Any] = {
        "attempts": Timer.attempts + 1,
        "last_error": error[:2000],
        "lease_owner": None,
        "lease_expires_at": None,
    }
    if retry_at is None:
        values["state"] = FAILED
    else:
        values["due_at"] = retry_at
    await tx.execute(
        update(Timer).where(Timer.id == timer_id, Timer.lease_owner == owner).values(**values)
    )


async def next_due_at(tx: AsyncSession) -> datetime | None:
    return await tx.scalar(select(func.min(Timer.due_at)).where(Timer.state == PENDING))


async def get(tx: AsyncSession, key: str) -> Timer | None:
    return await tx.scalar(select(Timer).where(Timer.key == key))
