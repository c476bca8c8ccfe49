"""The record of every model call: purpose, tokens, latency, error."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import cast

from sqlalchemy import Table, func, select
from sqlalchemy import insert as core_insert
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import ModelCall


@dataclass(frozen=True)
class ModelUsage:
    calls: int
    input_tokens: int
    output_tokens: int
    errors: int


_FIELDS = (
    "purpose",
    "model",
    "input_tokens",
    "output_tokens",
    "latency_ms",
    "error",
    "created_at",
)
# Once per model call: one Core INSERT on the table, not the ORM's unit of work (add, flush,
# identity map), which cost more than the statement.
_INSERT = core_insert(cast(Table, ModelCall.__table__))


async def insert(tx: AsyncSession, call: ModelCall) -> None:
    await insert_all(tx, [call])


async def insert_all(tx: AsyncSession, calls: Sequence[ModelCall]) -> list[None]:
    """`insert` of each, in one executemany (a None for each: a grouped write's results)."""
    if calls:
        await tx.execute(_INSERT, [{name: getattr(c, name) for name in _FIELDS} for c in calls])
    return [None] * len(calls)


async def usage_since(tx: AsyncSession, since: datetime) -> ModelUsage:
    row = (
        await tx.execute(
            select(
                func.count(ModelCall.id),
                func.coalesce(func.sum(ModelCall.input_tokens), 0),
                func.coalesce(func.sum(ModelCall.output_tokens), 0),
                func.count(ModelCall.error),
            ).where(ModelCall.created_at >= since)
        )
    ).one()
    return ModelUsage(int(row[0]), int(row[1]), int(row[2]), int(row[3]))


async def tokens_since(tx: AsyncSession, since: datetime, purposes: Sequence[str]) -> int:
    """Input and output tokens of the calls made for these purposes since a moment."""
    total = await tx.scalar(
        select(func.coalesce(func.sum(ModelCall.input_tokens + ModelCall.output_tokens), 0)).where(
            ModelCall.created_at >= since, ModelCall.purpose.in_(list(purposes))
        )
    )
    return int(total or 0)
