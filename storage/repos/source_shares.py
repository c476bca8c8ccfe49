"""Sources the owner shared with a conversation (the only way a group or another person's DM
sees records beyond its own chat)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import Source, SourceShare
from storage.repos._upsert import insert_for


async def share(
    tx: AsyncSession, *, source: str, conversation_id: int, by: str, now: datetime
) -> bool:
    """True if this share is new."""
    stmt = (
        insert_for(tx, SourceShare)
        .values(source=source, conversation_id=conversation_id, shared_by=by, created_at=now)
        .on_conflict_do_nothing(index_elements=["source", "conversation_id"])
        .returning(SourceShare.source)
    )
    return (await tx.execute(stmt)).scalar_one_or_none() is not None


async def unshare(tx: AsyncSession, *, source: str, conversation_id: int) -> bool:
    result = await tx.execute(
        delete(SourceShare).where(
            SourceShare.source == source, SourceShare.conversation_id == conversation_id
        )
    )
    return bool(getattr(result, "rowcount", 0))


async def shared_with(tx: AsyncSession, conversation_id: int) -> list[Source]:
    """The sources shared with this conversation (shares of unknown sources are skipped)."""
    stmt = (
        select(Source)
        .join(SourceShare, SourceShare.source == Source.name)
        .where(SourceShare.conversation_id == conversation_id)
        .order_by(Source.name)
    )
    return list((await tx.scalars(stmt)).all())
