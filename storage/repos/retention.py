"""Pruning operational tables in small batches, and the record of the last prune.

Each batch is one short transaction: a bounded read of candidate ids, then a delete by those
ids. Nothing locks a table, and on SQLite the one write lock is held for one batch at a time.

Two walks, both bounded by what is old, never by the table's size:
- by id (inbox, inbound events, outbox, model calls): ids grow with time, so the walk goes up
  the primary key from the oldest row and stops at the first row younger than the cutoff;
  old rows that must stay (a pending outbox row) are stepped over, not re-read in this run.
- by time (operations: their ids are names, not a sequence): down `ix_operations_created_at`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, delete, func, select, text, true
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

from storage.models import (
    InboundEvent,
    InboxItem,
    ModelCall,
    Operation,
    OutboxMessage,
    RetentionState,
    SessionEvent,
    SourceRecord,
)
from storage.repos.outbox import FAILED, SENT

STATE_NAME = "retention"


@dataclass(frozen=True)
class PrunedTable:
    """A table the pruner may shorten: its rows older than the cutoff (by `age`) go, those
    `prunable` says may go."""

    name: str  # as settings, the status page and `maka prune` name it
    model: Any
    age: InstrumentedAttribute[datetime]
    prunable: ColumnElement[bool]
    by_id: bool = True  # the walk up the integer primary key; else down an index on `age`
    dedupe: bool = False  # its rows make a redelivery a duplicate: kept DEDUPE_DAYS at least


INBOUND_EVENTS = PrunedTable(
    "inbound_events", InboundEvent, InboundEvent.received_at, true(), dedupe=True
)
# A user's messages once handled (answered, parked or recalled); what waits is never touched,
# nor a notice: `/why ID` explains a message the assistant sent on its own by its notice,
# and that message stays in the chat.
INBOX_ITEMS = PrunedTable(
    "inbox_items",
    InboxItem,
    InboxItem.created_at,
    and_(InboxItem.kind == "user_message", InboxItem.delivered_at.is_not(None)),
    dedupe=True,
)
# Settled only: a pending or uncertain row still has a send ahead of it.
OUTBOX = PrunedTable(
    "outbox", OutboxMessage, OutboxMessage.created_at, OutboxMessage.state.in_((SENT, FAILED))
)
MODEL_CALLS = PrunedTable("model_calls", ModelCall, ModelCall.created_at, true())
OPERATIONS = PrunedTable("operations", Operation, Operation.created_at, true(), by_id=False)
PRUNED_TABLES = (INBOUND_EVENTS, INBOX_ITEMS, OUTBOX, MODEL_CALLS, OPERATIONS)
# Sized for the status page but never pruned here: kept until forgotten.
KEPT_TABLES: tuple[Any, ...] = (SourceRecord, SessionEvent)


@dataclass
class Walk:
    """Where a by-id walk stands in one run: the last id it read, and whether it is done."""

    after: int = 0
    done: bool = False


async def next_batch(
    tx: AsyncSession, table: PrunedTable, cutoff: datetime, walk: Walk, limit: int
) -> list[Any]:
    """The ids of up to `limit` rows that may go (none, in a batch of rows that stay);
    `walk.done` once no older row is left to read."""
    model = table.model
    if not table.by_id:
        stmt = (
            select(model.id)
            .where(table.age < cutoff, table.prunable)
            .order_by(table.age, model.id)
            .limit(limit)
        )
        ids = list((await tx.scalars(stmt)).all())
        walk.done = len(ids) < limit
        return ids
    # One read of `limit` rows, whatever they hold: a batch stays as short when it steps over
    # many old rows that must stay.
    rows = (
        await tx.execute(
            select(model.id, table.age, table.prunable)
            .where(model.id > walk.after)
            .order_by(model.id)
            .limit(limit)
        )
    ).all()
    ids = []
    for row_id, age, prunable in rows:
        if age >= cutoff:  # the first young row: every later one is young too
            walk.done = True
            break
        walk.after = row_id
        if prunable:
            ids.append(row_id)
    else:
        walk.done = len(rows) < limit
    return ids


async def delete_ids(tx: AsyncSession, table: PrunedTable, ids: Sequence[Any]) -> int:
    if not ids:
        return 0
    model = table.model
    # The condition again: a row that changed since it was read (retried) stays.
    result = await tx.execute(delete(model).where(model.id.in_(ids), table.prunable))
    return int(getattr(result, "rowcount", 0) or 0)


async def sizes(tx: AsyncSession) -> dict[str, int]:
    """Rows per table: PostgreSQL's planner estimate (no scan); on SQLite an exact count,
    which is why this runs once per prune and is stored, never on a page view."""
    tables = [t.model.__tablename__ for t in PRUNED_TABLES] + [m.__tablename__ for m in KEPT_TABLES]
    found: dict[str, int] = {}
    if tx.get_bind().dialect.name == "postgresql":
        rows = await tx.execute(
            text(
                "SELECT relname, reltuples FROM pg_class "
                "WHERE relkind = 'r' AND relname = ANY(:names) "
                "AND relnamespace = to_regnamespace(current_schema())::oid"
            ),
            {"names": tables},
        )
        # -1: never analyzed yet (a new table): counted below instead
        found = {name: int(n) for name, n in rows.all() if n >= 0}
    for name in tables:
        if name not in found:
            found[name] = int(await tx.scalar(text(f"SELECT count(*) FROM {name}")) or 0)
    return found


async def last(tx: AsyncSession) -> RetentionState | None:
    return await tx.get(RetentionState, STATE_NAME)


async def record(
    tx: AsyncSession,
    *,
    started_at: datetime,
    finished_at: datetime,
    deleted: dict[str, int],
    table_sizes: dict[str, int],
    error: str | None,
) -> None:
    row = await tx.get(RetentionState, STATE_NAME)
    if row is None:
        row = RetentionState(name=STATE_NAME)
        tx.add(row)
    row.started_at, row.finished_at = started_at, finished_at
    row.deleted, row.sizes, row.error = dict(deleted), dict(table_sizes), error


async def count_prunable(tx: AsyncSession, table: PrunedTable, cutoff: datetime) -> int:
    """What a prune would remove now (`maka prune --dry-run`: once, by hand, so a count)."""
    model = table.model
    stmt = select(func.count()).select_from(model).where(table.age < cutoff, table.prunable)
    return int(await tx.scalar(stmt) or 0)
