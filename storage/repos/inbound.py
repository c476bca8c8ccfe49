"""Inbound platform events, unique per (platform, message_id): the database decides
duplicates, so every replica agrees."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import InboundEvent
from storage.repos._upsert import insert_for


async def insert_if_new(
    session: AsyncSession,
    *,
    platform: str,
    message_id: str,
    event_type: str,
    chat_id: str | None,
    payload: dict[str, Any],
    status: str,
    received_at: datetime,
) -> int | None:
    """The new row's id, or None when this message was stored before."""
    stmt = (
        insert_for(session, InboundEvent)
        .values(
            platform=platform,
            message_id=message_id,
            event_type=event_type,
            chat_id=chat_id,
            payload=payload,
            status=status,
            received_at=received_at,
        )
        .on_conflict_do_nothing(index_elements=["platform", "message_id"])
        .returning(InboundEvent.id)
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def count(session: AsyncSession, platform: str | None = None) -> int:
    stmt = select(func.count(InboundEvent.id))
    if platform is not None:
        stmt = stmt.where(InboundEvent.platform == platform)
    return int(await session.scalar(stmt) or 0)


async def get(session: AsyncSession, platform: str, message_id: str) -> InboundEvent | None:
    return await session.scalar(
        select(InboundEvent).where(
            InboundEvent.platform == platform, InboundEvent.message_id == message_id
        )
    )
