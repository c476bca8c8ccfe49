"""Named exclusive leases (e.g. the one Bot worker of a conversation, across replicas). A
lease whose holder is a Host that is gone is free, as with claimed rows (`storage.claims`)."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from storage.claims import owner_is_gone
from storage.models import Lease
from storage.repos._upsert import insert_for


async def acquire(
    tx: AsyncSession, name: str, owner: str, ttl: timedelta, now: datetime
) -> bool:
    """Take or renew `name` for `owner`; True if `owner` holds it afterwards."""
    stmt = (
        insert_for(tx, Lease)
        .values(name=name, owner=owner, expires_at=now + ttl, acquired_at=now)
        .on_conflict_do_update(
            index_elements=[Lease.name],
            set_={"owner": owner, "expires_at": now + ttl},
            where=or_(
                Lease.expires_at < now, Lease.owner == owner, owner_is_gone(Lease.owner, now)
            ),
        )
        .returning(Lease.owner)
    )
    return (await tx.execute(stmt)).scalar_one_or_none() == owner


async def renew(tx: AsyncSession, name: str, owner: str, ttl: timedelta, now: datetime) -> bool:
    """Extend a lease `owner` still holds; False once it holds it no more (given back, or
    taken over): a renewal never takes a lease anew."""
    result = await tx.execute(
        update(Lease).where(Lease.name == name, Lease.owner == owner).values(expires_at=now + ttl)
    )
    return bool(getattr(result, "rowcount", 0))


async def release(tx: AsyncSession, name: str, owner: str) -> None:
    await tx.execute(delete(Lease).where(Lease.name == name, Lease.owner == owner))


async def release_all(tx: AsyncSession, owner: str) -> int:
    result = await tx.execute(delete(Lease).where(Lease.owner == owner))
    return int(getattr(result, "rowcount", 0) or 0)


async def holder(tx: AsyncSession, name: str, now: datetime) -> str | None:
    held = select(Lease.owner).where(
        Lease.name == name, Lease.expires_at >= now, ~owner_is_gone(Lease.owner, now)
    )
    return await tx.scalar(held)
