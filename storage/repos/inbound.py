"""Inbound platform events, unique per (platform, message_id): the database decides
duplicates, so every replica agrees."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import InboundEvent
from storage.repos._upsert import insert_for


@dataclass(frozen=True)
class NewEvent:
    platform: str
    message_id: str
    event_type: str
    chat_id: str | None
    payload: dict[str, Any]
    status: str
    received_at: datetime


async def insert_many_if_new(
    tx: AsyncSession, events: Sequence[NewEvent]
) -> set[tuple[str, str]]:
    """One multi-row insert; the (platform, message_id) pairs that were new."""
    if not events:
        return set()
    # Hot path: a Core statement run with a parameter list, so SQLAlchemy compiles it once
    # and batches it into multi-row VALUES itself ("insertmanyvalues").
    table = InboundEvent.__table__
    stmt = (
        insert_for(tx, table)
        .on_conflict_do_nothing(index_elements=["platform", "message_id"])
        .returning(table.c.platform, table.c.message_id)
    )
    result = await tx.execute(stmt, [dict(vars(e)) for e in events])
    return {(p, m) for p, m in result.all()}


async def count(tx: AsyncSession, platform: str | None = None) -> int:
    stmt = select(func.count(InboundEvent.id))
    if platform is not None:
        stmt = stmt.where(InboundEvent.platform == platform)
    return int(await tx.scalar(stmt) or 0)


async def get(tx: AsyncSession, platform: str, message_id: str) -> InboundEvent | None:
    return await tx.scalar(
        select(InboundEvent).where(
            InboundEvent.platform == platform, InboundEvent.message_id == message_id
        )
    )
