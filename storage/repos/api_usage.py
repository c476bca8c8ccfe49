"""Counting platform API calls per day, and reading the day and month totals."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import ApiUsage
from storage.repos._upsert import insert_for


@dataclass(frozen=True)
class UsageTotals:
    today: int
    this_month: int


async def add(tx: AsyncSession, *, platform: str, api: str, day: date, calls: int) -> None:
    stmt = insert_for(tx, ApiUsage).values(platform=platform, api=api, day=day, calls=calls)
    stmt = stmt.on_conflict_do_update(
        index_elements=["platform", "api", "day"],
        set_={"calls": ApiUsage.calls + stmt.excluded.calls},
    )
    await tx.execute(stmt)


async def totals(tx: AsyncSession, *, platform: str, today: date) -> UsageTotals:
    month_start = today.replace(day=1)
    day_total = await tx.scalar(
        select(func.coalesce(func.sum(ApiUsage.calls), 0)).where(
            ApiUsage.platform == platform, ApiUsage.day == today
        )
    )
    month_total = await tx.scalar(
        select(func.coalesce(func.sum(ApiUsage.calls), 0)).where(
            ApiUsage.platform == platform, ApiUsage.day >= month_start, ApiUsage.day <= today
        )
    )
    return UsageTotals(int(day_total or 0), int(month_total or 0))
