"""Ids that may still appear below ones already seen: the one gap rule of every reader that
follows an append-only table by id (the search followers, memory index coverage).

PostgreSQL hands out ids before commit and transactions commit in any order, so a reader can
see id 7 while id 6 is still in flight; or id 6 never shows up (a rollback or a conflicting
`INSERT … ON CONFLICT DO NOTHING` consumed it). A reader must not move a checkpoint past a
missing id that may still come, nor wait for ever for one that will not: a missing range is
held for `timeout` seconds from when it was first noticed, then passed over. `horizon` is how
far a checkpoint may move. SQLite writes one at a time, so there ids appear in order and no
gap is ever held (except one a rollback left, for `timeout`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import func, literal, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

GAP_TIMEOUT = 60.0  # seconds a missing id may take to show up before it is passed over

Range = tuple[int, int]  # inclusive


def missing_between(after: int, ids: Iterable[int]) -> list[Range]:
    """The ranges missing from `ids` (ascending, all above `after`), from `after` + 1 on."""
    out: list[Range] = []
    expected = after + 1
    for seq in ids:
        if seq > expected:
            out.append((expected, seq - 1))
        expected = seq + 1
    return out


async def missing_ranges(
    tx: AsyncSession,
    id_column: InstrumentedAttribute[int],
    created_column: InstrumentedAttribute[datetime],
    after: int,
    upto: int,
    *,
    young_since: datetime,
) -> list[Range]:
    """The id ranges in (`after`, `upto`] with no row that may still fill, found by the
    database without reading a backlog into Python. A range whose next row was stored before
    `young_since` is left out: the transaction that took the missing id began before that row
    was stored, so it has been open longer than any gap is held (history is full of such
    holes, left by conflicts and rollbacks, and must not hold anyone up)."""
    ids = select(
        id_column.label("id"),
        created_column.label("stored"),
        func.coalesce(func.lag(id_column).over(order_by=id_column), literal(after)).label("prev"),
    ).where(id_column > after, id_column <= upto)
    listed = ids.subquery()
    rows = await tx.execute(
        select(listed.c.prev + 1, listed.c.id - 1)
        .where(listed.c.id - listed.c.prev > 1, listed.c.stored >= young_since)
        .order_by(listed.c.id)
    )
    gaps: list[Range] = [(int(a), int(b)) for a, b in rows.all()]
    last = await tx.scalar(select(func.max(id_column)).where(id_column > after, id_column <= upto))
    top = after if last is None else int(last)
    if top < upto:
        gaps.append((top + 1, upto))
    return gaps


@dataclass
class SeqGaps:
    """Missing id ranges a reader has noticed, each with when it was first noticed (the
    reader's clock). Kept in memory: after a restart gaps are noticed anew, which only
    delays a checkpoint by `timeout`."""

    timeout: float = GAP_TIMEOUT
    noticed: dict[Range, float] = field(default_factory=dict)
    passed: list[Range] = field(default_factory=list)  # held long enough: never held again

    @property
    def ranges(self) -> list[Range]:
        return sorted(self.noticed)

    def add(self, missing: Iterable[Range], now: float) -> None:
        """Note newly missing ranges (above anything noticed before)."""
        for gap in missing:
            self.noticed.setdefault(gap, now)

    def observe(self, missing: Sequence[Range], now: float) -> None:
        """What is missing now, as the database tells: ranges no longer missing were filled;
        a range inside one noticed before keeps that one's age."""
        kept: dict[Range, float] = {}
        for first, last in missing:
            if any(a <= first and last <= b for a, b in self.passed):
                continue
            ages = [t for (a, b), t in self.noticed.items() if a <= last and first <= b]
            kept[(first, last)] = min(ages, default=now)
        self.noticed = kept

    def found(self, ids: Iterable[int]) -> None:
        """Ids that showed up late: they split the ranges that held them."""
        present = sorted(set(ids))
        for (first, last), noticed in list(self.noticed.items()):
            inside = [i for i in present if first <= i <= last]
            if not inside:
                continue
            del self.noticed[(first, last)]
            for gap in missing_between(first - 1, [*inside, last + 1]):
                self.noticed[gap] = noticed

    def expire(self, now: float) -> None:
        """Pass over ranges held longer than `timeout`: nothing will come."""
        for gap, noticed in list(self.noticed.items()):
            if now - noticed >= self.timeout:
                del self.noticed[gap]
                self.passed.append(gap)

    def forget_through(self, checkpoint: int) -> None:
        """The reader's checkpoint reached `checkpoint`: what lies at or below no longer matters."""
        self.passed = [(a, b) for a, b in self.passed if b > checkpoint]

    def horizon(self, seen_to: int) -> int:
        """How far a checkpoint may move: below the first range that may still fill."""
        return min(first for first, _ in self.noticed) - 1 if self.noticed else seen_to
