"""Idempotent writes, claimed once by their operation id (`operations`): the one way Matters'
settles and WorkHub's routing writes make a retry converge instead of applying twice."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import Operation
from storage.repos._upsert import insert_for

SETTLE = "settle"  # a Matter's settle at one revision; WorkHub's kinds are its actions


async def claim(
    tx: AsyncSession,
    *,
    operation_id: str,
    kind: str,
    subject_id: int | None,
    fingerprint: str,
    outcome: dict[str, Any],
    now: datetime,
) -> Operation | None:
    """Record the operation in the caller's transaction; None if it is new, else the one
    stored earlier under this id (the caller compares fingerprints and rolls back)."""
    stmt = (
        insert_for(tx, Operation)
        .values(
            id=operation_id,
            kind=kind,
            subject_id=subject_id,
            fingerprint=fingerprint,
            outcome=outcome,
            created_at=now,
        )
        .on_conflict_do_nothing(index_elements=["id"])
        .returning(Operation.id)
    )
    if (await tx.execute(stmt)).scalar_one_or_none() is not None:
        return None
    return await tx.get(Operation, operation_id)


async def get(tx: AsyncSession, operation_id: str) -> Operation | None:
    return await tx.get(Operation, operation_id)


async def latest(tx: AsyncSession, kind: str, subject_id: int) -> Operation | None:
    """The newest operation of `kind` on `subject_id` (e.g. a Matter's last settle)."""
    return await tx.scalar(
        select(Operation)
        .where(Operation.kind == kind, Operation.subject_id == subject_id)
        .order_by(Operation.created_at.desc(), Operation.id.desc())
        .limit(1)
    )
