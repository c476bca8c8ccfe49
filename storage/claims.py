"""The one way to claim work: lease rows with an expiry.

On PostgreSQL, `FOR UPDATE SKIP LOCKED` lets replicas claim disjoint rows without waiting on
each other; the lease columns then make the claim outlive the transaction, and an expired
lease (a crashed worker) frees the row again. On SQLite the caller's `Database.write()`
transaction (BEGIN IMMEDIATE, one process) already makes select-then-update atomic.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol, TypeVar

from sqlalchemy import ColumnElement, literal, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute


class Claimable(Protocol):
    lease_owner: Any
    lease_expires_at: Any


T = TypeVar("T", bound=Claimable)


def lease_is_free(model: type[Claimable], now: datetime) -> ColumnElement[bool]:
    return or_(model.lease_expires_at.is_(None), model.lease_expires_at < now)


async def exists_claimable(
    session: AsyncSession,
    model: type[Claimable],
    *,
    where: Sequence[ColumnElement[bool]],
    now: datetime,
) -> bool:
    """A read-only probe: idle workers call it before claiming, so on SQLite an idle poll
    does not take the single write lock."""
    stmt = select(literal(1)).select_from(model).where(*where, lease_is_free(model, now))
    return (await session.scalar(stmt.limit(1))) is not None


async def claim_rows(
    session: AsyncSession,
    model: type[T],
    *,
    where: Sequence[ColumnElement[bool]],
    order_by: Sequence[InstrumentedAttribute[Any]],
    limit: int,
    owner: str,
    lease: timedelta,
    now: datetime,
) -> list[T]:
    stmt = (
        select(model)
        .where(*where, lease_is_free(model, now))
        .order_by(*order_by)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    rows = list((await session.scalars(stmt)).all())
    for row in rows:
        row.lease_owner = owner
        row.lease_expires_at = now + lease
    await session.flush()
    return rows


async def release_rows(
    session: AsyncSession, model: type[Claimable], owner: str, ids: Sequence[Any] | None = None
) -> int:
    """Give claims back (all of this owner's, or just `ids`); returns how many."""
    stmt = update(model).where(model.lease_owner == owner)
    if ids is not None:
        stmt = stmt.where(model.id.in_(ids))  # type: ignore[attr-defined]
    result = await session.execute(stmt.values(lease_owner=None, lease_expires_at=None))
    return int(getattr(result, "rowcount", 0) or 0)
