"""The one way to claim work: lease rows with an expiry.

A claim is one UPDATE whose subquery picks the rows. On PostgreSQL its `FOR UPDATE SKIP
LOCKED` lets replicas claim disjoint rows without waiting on each other; the lease columns
then make the claim outlive the transaction, and an expired lease frees the row again. On
SQLite writes go one at a time (one process, BEGIN IMMEDIATE) and the statement is atomic.

A claim is also free once its owner is gone: every running Host keeps a short liveness lease
(`host:<instance id>`, renewed every few seconds); when that has lapsed the process was
killed or cut off, and the work it held is taken over in seconds instead of waiting out a
lease sized for the longest unit of work. An owner with no liveness lease at all (a tool, a
test) keeps its claims until they expire.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, Protocol, TypeVar

from sqlalchemy import (
    ColumnElement,
    Integer,
    Select,
    String,
    bindparam,
    exists,
    inspect,
    literal,
    or_,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute, aliased
from sqlalchemy.sql.dml import ReturningUpdate

from storage.models import Lease
from storage.types import UTCDateTime

HOST_LEASE_PREFIX = "host:"


class Claimable(Protocol):
    lease_owner: Any
    lease_expires_at: Any


T = TypeVar("T", bound=Claimable)


def host_lease_name(instance_id: str) -> str:
    return f"{HOST_LEASE_PREFIX}{instance_id}"


# One alias for every use: a fresh one per statement made building a claim's WHERE clause
# cost a third of a millisecond, on every claim of every worker.
_LIVENESS = aliased(Lease, name="liveness")


def owner_is_gone(owner: Any, now: datetime | ColumnElement[datetime]) -> ColumnElement[bool]:
    """`owner` is a Host whose liveness lease has lapsed."""
    return exists().where(
        _LIVENESS.name == literal(HOST_LEASE_PREFIX, String) + owner, _LIVENESS.expires_at < now
    )


def lease_is_free(
    model: type[Claimable], now: datetime | ColumnElement[datetime]
) -> ColumnElement[bool]:
    return or_(
        model.lease_expires_at.is_(None),
        model.lease_expires_at < now,
        owner_is_gone(model.lease_owner, now),
    )


# The time in a probe (a bind parameter: a probe is built once).
NOW: ColumnElement[datetime] = bindparam("now", type_=UTCDateTime())


@dataclass(frozen=True)
class Probe:
    """A read-only check for claimable rows: idle workers run it before claiming, so on
    SQLite an idle poll does not take the single write lock. Every idle poll and wake-up of
    every worker runs one, and building a statement and its cache key cost more than running
    it (2.4 of 4.3 ms here), so a probe is built once, at import, with `NOW` and other bind
    parameters standing for what changes."""

    stmt: Select[int]

    async def finds(self, tx: AsyncSession, *, now: datetime, **params: object) -> bool:
        return (await tx.scalar(self.stmt, {"now": now, **params})) is not None


def probe(model: type[Claimable], where: Sequence[ColumnElement[bool]]) -> Probe:
    """The probe for `where`, which compares times with `NOW`."""
    stmt = select(literal(1)).select_from(model).where(*where, lease_is_free(model, NOW))
    return Probe(stmt.limit(1))


@dataclass(frozen=True)
class Claim(Generic[T]):
    """Claiming the free rows of a model that match a condition, in an order: built once, at
    import, like a `Probe` (a claim runs for every unit of work a worker takes). One UPDATE
    whose WHERE picks the rows: a claim is one statement, not a read of the rows and then
    the write of each (an idle sender's claim, on PostgreSQL in `Database.write_statement`,
    is one round trip, where BEGIN, the read, the write and COMMIT were four)."""

    stmt: ReturningUpdate[T]
    order: tuple[str, ...]  # the attributes the rows are taken in order of

    async def take(
        self,
        tx: AsyncSession,
        *,
        limit: int,
        owner: str,
        lease: timedelta,
        now: datetime,
        **params: object,
    ) -> list[T]:
        bound = {"now": now, "limit": limit, "owner": owner, "expires": now + lease, **params}
        rows = list((await tx.scalars(self.stmt, bound)).all())
        # RETURNING gives no order; PostgreSQL's ascending order puts NULLs last.
        return sorted(rows, key=lambda row: [_nulls_last(getattr(row, a)) for a in self.order])


def _nulls_last(value: Any) -> tuple[bool, Any]:
    return (value is None, value)


def claim(
    model: type[T],
    where: Sequence[ColumnElement[bool]],
    order_by: Sequence[InstrumentedAttribute[Any]],
    *,
    also: Mapping[str, Any] | None = None,
) -> Claim[T]:
    """The claim of `model`'s rows that match `where` (which compares times with `NOW`);
    `also` sets more columns of the rows claimed (column name -> value or SQL expression)."""
    [key] = inspect(model).primary_key  # every claimable model has a one-column key
    chosen = (
        select(key)
        .where(*where, lease_is_free(model, NOW))
        .order_by(*order_by)
        .limit(bindparam("limit", type_=Integer()))
        .with_for_update(skip_locked=True)
        # Its own FROM, never the UPDATE's row (SQLAlchemy keeps a subquery's only FROM;
        # said here so that no later change makes it so): correlated, its LIMIT would hold
        # for each row, and every row due would be claimed.
        .correlate(None)
    )
    stmt = (
        update(model)
        .where(key.in_(chosen.scalar_subquery()))
        .values(
            lease_owner=bindparam("owner", type_=String()),
            lease_expires_at=bindparam("expires", type_=UTCDateTime()),
            **(also or {}),
        )
        .returning(model)
        .execution_options(synchronize_session=False, populate_existing=True)
    )
    return Claim(stmt, tuple(attribute.key for attribute in order_by))


async def renew_rows(
    tx: AsyncSession,
    model: type[Claimable],
    owner: str,
    ids: Sequence[Any],
    *,
    lease: timedelta,
    now: datetime,
) -> int:
    """Extend this owner's claims on `ids`; how many it still held."""
    stmt = (
        update(model)
        .where(model.lease_owner == owner, model.id.in_(ids))  # type: ignore[attr-defined]
        .values(lease_expires_at=now + lease)
    )
    result = await tx.execute(stmt)
    return int(getattr(result, "rowcount", 0) or 0)


async def release_rows(
    tx: AsyncSession, model: type[Claimable], owner: str, ids: Sequence[Any] | None = None
) -> int:
    """Give claims back (all of this owner's, or just `ids`); returns how many."""
    stmt = update(model).where(model.lease_owner == owner)
    if ids is not None:
        stmt = stmt.where(model.id.in_(ids))  # type: ignore[attr-defined]
    result = await tx.execute(stmt.values(lease_owner=None, lease_expires_at=None))
    return int(getattr(result, "rowcount", 0) or 0)
