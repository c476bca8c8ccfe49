"""The record of every model call: purpose, tokens, latency, error."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import BigInteger, Table, case, extract, func, select
from sqlalchemy import cast as sql_cast
from sqlalchemy import insert as core_insert
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import ModelCall


@dataclass(frozen=True)
class ModelUsage:
    calls: int
    input_tokens: int
    output_tokens: int
    errors: int
    estimated: int = 0  # calls whose tokens are estimates (the endpoint reported none)


_FIELDS = (
    "purpose",
    "model",
    "input_tokens",
    "output_tokens",
    "latency_ms",
    "error",
    "created_at",
    "usage_estimated",
    "fallback",
    "conversation_id",
)
# Once per model call: one Core INSERT on the table, not the ORM's unit of work (add, flush,
# identity map), which cost more than the statement.
_INSERT = core_insert(cast(Table, ModelCall.__table__))


def _row(call: ModelCall) -> dict[str, Any]:
    # An ORM object's column defaults are applied at flush, which a Core insert skips.
    row = {name: getattr(call, name) for name in _FIELDS}
    for flag in ("usage_estimated", "fallback"):
        if row[flag] is None:
            row[flag] = False
    return row


async def insert(tx: AsyncSession, call: ModelCall) -> None:
    await insert_all(tx, [call])


async def insert_all(tx: AsyncSession, calls: Sequence[ModelCall]) -> list[None]:
    """`insert` of each, in one executemany (a None for each: a grouped write's results)."""
    if calls:
        await tx.execute(_INSERT, [_row(c) for c in calls])
    return [None] * len(calls)


async def usage_since(tx: AsyncSession, since: datetime) -> ModelUsage:
    row = (
        await tx.execute(
            select(
                func.count(ModelCall.id),
                func.coalesce(func.sum(ModelCall.input_tokens), 0),
                func.coalesce(func.sum(ModelCall.output_tokens), 0),
                func.count(ModelCall.error),
                func.count(ModelCall.id).filter(ModelCall.usage_estimated.is_(True)),
            ).where(ModelCall.created_at >= since)
        )
    ).one()
    return ModelUsage(int(row[0]), int(row[1]), int(row[2]), int(row[3]), int(row[4]))


async def tokens_since(tx: AsyncSession, since: datetime, purposes: Sequence[str]) -> int:
    """Input and output tokens of the calls made for these purposes since a moment."""
    total = await tx.scalar(
        select(func.coalesce(func.sum(ModelCall.input_tokens + ModelCall.output_tokens), 0)).where(
            ModelCall.created_at >= since, ModelCall.purpose.in_(list(purposes))
        )
    )
    return int(total or 0)


# Every time zone's offset from UTC is a whole number of quarter hours (Kathmandu's +5:45
# too), so quarter hours summed in UTC add up to any zone's days exactly.
QUARTER_HOUR = 900  # seconds


@dataclass(frozen=True)
class QuarterUsage:
    start: datetime  # UTC
    purpose: str
    tokens: int  # input and output
    calls: int


async def usage_by_quarter_hour(tx: AsyncSession, since: datetime) -> list[QuarterUsage]:
    """The model calls since a moment, summed by quarter hour and purpose in the database: a
    day-by-day view in any zone reads at most ~100 rows a day and purpose, not every call."""
    seconds: Any = (
        func.strftime("%s", ModelCall.created_at)
        if tx.get_bind().dialect.name == "sqlite"
        else func.floor(extract("epoch", ModelCall.created_at))  # a cast would round
    )
    quarter = sql_cast(seconds, BigInteger) // QUARTER_HOUR
    rows = await tx.execute(
        select(
            quarter,
            ModelCall.purpose,
            func.coalesce(func.sum(ModelCall.input_tokens + ModelCall.output_tokens), 0),
            func.count(ModelCall.id),
        )
        .where(ModelCall.created_at >= since)
        .group_by(quarter, ModelCall.purpose)
    )
    return [
        QuarterUsage(
            datetime.fromtimestamp(int(q) * QUARTER_HOUR, UTC), str(purpose), int(t), int(n)
        )
        for q, purpose, t, n in rows.all()
    ]


@dataclass(frozen=True)
class Spend:
    """Tokens spent since a moment on one model, for one purpose (or one conversation)."""

    key: str  # the purpose, or the conversation id as text
    model: str
    input_tokens: int
    output_tokens: int
    calls: int
    fallback_calls: int
    estimated_calls: int = 0  # calls whose endpoint reported no usage (tokens estimated)


async def spend_since(
    tx: AsyncSession, since: datetime, *, by_conversation: bool = False
) -> list[Spend]:
    """Tokens by purpose and model since a moment, summed in the database; by conversation
    and model (the calls made for a conversation only) with `by_conversation`."""
    key: Any = ModelCall.conversation_id if by_conversation else ModelCall.purpose
    query = select(
        key,
        ModelCall.model,
        func.coalesce(func.sum(ModelCall.input_tokens), 0),
        func.coalesce(func.sum(ModelCall.output_tokens), 0),
        func.count(ModelCall.id),
        func.coalesce(func.sum(case((ModelCall.fallback.is_(True), 1), else_=0)), 0),
        func.coalesce(func.sum(case((ModelCall.usage_estimated.is_(True), 1), else_=0)), 0),
    ).where(ModelCall.created_at >= since)
    if by_conversation:
        query = query.where(ModelCall.conversation_id.is_not(None))
    rows = await tx.execute(query.group_by(key, ModelCall.model))
    return [
        Spend(str(k), str(model), int(i), int(o), int(n), int(f), int(e))
        for k, model, i, o, n, f, e in rows.all()
    ]
