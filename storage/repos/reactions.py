"""Reactions added to messages, stored once per platform event (the database decides
duplicates, as for messages)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import MessageReaction
from storage.repos._upsert import insert_for


async def add_if_new(
    tx: AsyncSession,
    *,
    platform: str,
    event_id: str,
    message_id: str,
    operator_id: str | None,
    emoji: str,
    created_at: datetime,
    received_at: datetime,
) -> bool:
    """False when this event was stored before (a redelivery)."""
    table = MessageReaction.__table__
    stmt = (
        insert_for(tx, table)
        .values(
            platform=platform,
            event_id=event_id,
            message_id=message_id,
            operator_id=operator_id,
            emoji=emoji,
            created_at=created_at,
            received_at=received_at,
        )
        .on_conflict_do_nothing(index_elements=["platform", "event_id"])
        .returning(table.c.id)
    )
    return (await tx.execute(stmt)).first() is not None
