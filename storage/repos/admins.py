"""Admins added by command."""

from __future__ import annotations

from datetime import datetime
from typing import cast

from sqlalchemy import String, Table, bindparam, delete, literal, select
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import Admin
from storage.repos._upsert import insert_for


async def add(tx: AsyncSession, open_id: str, added_by: str, now: datetime) -> bool:
    """True if newly added."""
    stmt = (
        insert_for(tx, Admin)
        .values(open_id=open_id, added_by=added_by, added_at=now)
        .on_conflict_do_nothing(index_elements=["open_id"])
        .returning(Admin.open_id)
    )
    return (await tx.execute(stmt)).scalar_one_or_none() is not None


async def remove(tx: AsyncSession, open_id: str) -> bool:
    result = await tx.execute(delete(Admin).where(Admin.open_id == open_id))
    return bool(getattr(result, "rowcount", 0))


async def all_ids(tx: AsyncSession) -> list[str]:
    return list((await tx.scalars(select(Admin.open_id).order_by(Admin.added_at))).all())


_ADMINS = cast(Table, Admin.__table__)
# Asked for every message a Bot turn reads: built once, bound per call.
_EXISTS = select(literal(1)).where(_ADMINS.c.open_id == bindparam("open_id", type_=String()))


async def exists(tx: AsyncSession, open_id: str) -> bool:
    return await tx.scalar(_EXISTS, {"open_id": open_id}) is not None
