"""The owner's chats chosen to be read as the owner (`/sync chats add|remove`)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import OwnerChat
from storage.repos._upsert import insert_for


async def choose(
    tx: AsyncSession, *, chat_id: str, title: str | None, chat_type: str, by: str, now: datetime
) -> bool:
    """True if the chat was not chosen before (a second add keeps the first)."""
    stmt = (
        insert_for(tx, OwnerChat)
        .values(chat_id=chat_id, title=title, chat_type=chat_type, chosen_by=by, chosen_at=now)
        .on_conflict_do_nothing(index_elements=["chat_id"])
        .returning(OwnerChat.chat_id)
    )
    return (await tx.execute(stmt)).scalar_one_or_none() is not None


async def unchoose(tx: AsyncSession, chat_id: str) -> bool:
    result = await tx.execute(delete(OwnerChat).where(OwnerChat.chat_id == chat_id))
    return bool(getattr(result, "rowcount", 0))


async def chosen(tx: AsyncSession) -> list[OwnerChat]:
    return list((await tx.scalars(select(OwnerChat).order_by(OwnerChat.chat_id))).all())
