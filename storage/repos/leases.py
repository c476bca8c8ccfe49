"""Named exclusive leases (e.g. the one Bot worker of a conversation, across replicas). A
lease whose holder is a Host that is gone is free, as with claimed rows (`storage.claims`)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import String, Table, bindparam, delete, literal_column, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from storage.claims import owner_is_gone
from storage.models import Lease
from storage.repos._lists import in_list
from storage.repos._upsert import per_dialect
from storage.types import UTCDateTime

_LEASES = cast(Table, Lease.__table__)  # Core, not the ORM entity: no ORM bulk-DML path
# The owner of the row an upsert conflicts with, named as SQL names it there: SQLAlchemy does
# not correlate a subquery in ON CONFLICT … WHERE, so `_LEASES.c.owner` in `owner_is_gone`
# made its EXISTS scan every lease, true for every row once any one Host had died.
_CONFLICTING_OWNER = literal_column(f"{_LEASES.name}.owner", String())


def _acquire_all(insert: Any) -> Any:
    """Leases for one owner (multi-row VALUES: each row binds its own, and the conflict check
    reads the row's time as `excluded`'s, not a parameter of its own)."""
    stmt = insert(_LEASES)
    now = literal_column("excluded.acquired_at", UTCDateTime())
    return (
        stmt.values(
            name=bindparam("name", type_=String()),
            owner=bindparam("owner", type_=String()),
            expires_at=bindparam("expires", type_=UTCDateTime()),
            acquired_at=bindparam("now", type_=UTCDateTime()),
        )
        .on_conflict_do_update(
            index_elements=[_LEASES.c.name],
            set_={"owner": stmt.excluded.owner, "expires_at": stmt.excluded.expires_at},
            where=or_(
                _LEASES.c.expires_at < now,
                _LEASES.c.owner == stmt.excluded.owner,
                owner_is_gone(_CONFLICTING_OWNER, now),
            ),
        )
        .returning(_LEASES.c.name)
    )


# Taken, renewed and given back by every Bot turn (a group's turns at once): built once,
# bound per call. An UPDATE may not bind a column's own name ("name", "owner").
_ACQUIRE_ALL = per_dialect(_acquire_all)
_RENEW_ALL = (
    update(_LEASES)
    .where(
        in_list(_LEASES.c.name, "names"),
        _LEASES.c.owner == bindparam("holder", type_=String()),
    )
    .values(expires_at=bindparam("expires", type_=UTCDateTime()))
    .returning(_LEASES.c.name)
)
_RELEASE_ALL = (
    delete(_LEASES)
    .where(
        in_list(_LEASES.c.name, "names"),
        _LEASES.c.owner == bindparam("holder", type_=String()),
    )
    .returning(_LEASES.c.name)
)


async def acquire(tx: AsyncSession, name: str, owner: str, ttl: timedelta, now: datetime) -> bool:
    """Take or renew `name` for `owner`; True if `owner` holds it afterwards."""
    return name in await acquire_all(tx, [name], owner, ttl, now)


async def renew(tx: AsyncSession, name: str, owner: str, ttl: timedelta, now: datetime) -> bool:
    """Extend a lease `owner` still holds; False once it holds it no more (given back, or
    taken over): a renewal never takes a lease anew. On PostgreSQL the row stays locked to
    the end of `tx`: a takeover waits for it, so a write checked by a renewal in the same
    transaction commits before any other owner's."""
    return name in await renew_all(tx, [name], owner, ttl, now)


async def release(tx: AsyncSession, name: str, owner: str) -> bool:
    """Give `name` back; False if `owner` did not hold it (never, or no longer)."""
    return name in await release_each(tx, [name], owner)


async def acquire_all(
    tx: AsyncSession, names: list[str], owner: str, ttl: timedelta, now: datetime
) -> set[str]:
    """`acquire` of each of `names` for `owner`, in one statement: the names it holds now."""
    if not names:
        return set()
    expires = now + ttl
    # In one order everywhere: two replicas' groups that want the same leases lock their rows
    # in the same order, and do not deadlock.
    rows = [{"name": n, "owner": owner, "expires": expires, "now": now} for n in sorted(names)]
    return set((await tx.execute(_ACQUIRE_ALL(tx), rows)).scalars())


async def renew_all(
    tx: AsyncSession, names: list[str], owner: str, ttl: timedelta, now: datetime
) -> set[str]:
    """`renew` of each of `names`, in one statement: the names `owner` still holds."""
    if not names:
        return set()
    bound = {"names": names, "holder": owner, "expires": now + ttl}
    return set((await tx.execute(_RENEW_ALL, bound)).scalars())


async def release_each(tx: AsyncSession, names: list[str], owner: str) -> set[str]:
    """`release` of each of `names`, in one statement: those `owner` held until now."""
    if not names:
        return set()
    return set((await tx.execute(_RELEASE_ALL, {"names": names, "holder": owner})).scalars())


async def release_all(tx: AsyncSession, owner: str) -> int:
    result = await tx.execute(delete(Lease).where(Lease.owner == owner))
    return int(getattr(result, "rowcount", 0) or 0)


async def holder(tx: AsyncSession, name: str, now: datetime) -> str | None:
    held = select(Lease.owner).where(
        Lease.name == name, Lease.expires_at >= now, ~owner_is_gone(Lease.owner, now)
    )
    return await tx.scalar(held)
