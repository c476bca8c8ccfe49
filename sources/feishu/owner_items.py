"""The owner's calendar events and Feishu tasks as they stand in the synced records (the
calendar source's and the tasks source's current versions; a removed item is a tombstone,
with no `sent_at`): what discovery's pre-check counts as coming up, and what a Matter can
wait for.

Cheap by construction: every query names its source (the `(source, external_id)` unique
index leads with it), an event's start is its record's `sent_at`, and a task's due time and
completion are read from its payload (`due` and `completed_at`, epoch milliseconds as
strings of 13 digits, so they compare as text)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from sources.feishu.owner_units import CALENDAR_UNIT, TASKS_UNIT
from storage.models import SourceRecord
from storage.repos._like import escape_like
from storage.repos.source_records import is_tombstone

UPCOMING_SHOWN = 20  # a round names at most this many events and tasks


@dataclass(frozen=True)
class OwnerItem:
    kind: Literal["event", "task"]
    item_id: str  # the event id or the task guid
    title: str
    scope: str
    record_id: int  # its current record (`rec-N` for memory_original)
    start: datetime | None = None  # an event's
    end: datetime | None = None
    due: datetime | None = None  # a task's
    completed_at: datetime | None = None

    @property
    def key(self) -> str:
        """What the pre-check compares: a moved event or a task due at a new time is news."""
        when = self.start if self.kind == "event" else self.due
        return f"{self.kind}:{self.item_id}@{when.isoformat() if when else '-'}"


def _stamp(value: Any, per_second: int) -> datetime | None:
    text = str(value or "")
    if not text.isdigit() or not int(text):
        return None
    return datetime.fromtimestamp(int(text) / per_second, UTC)


def _ms(when: datetime) -> str:
    return str(int(when.timestamp() * 1000))


def item_of(record: SourceRecord) -> OwnerItem | None:
    """The record as an event or a task; None for a tombstone or another source's record."""
    payload = record.payload or {}
    if is_tombstone(payload):
        return None
    title = record.title or "(no title)"
    if record.source == CALENDAR_UNIT:
        start = _stamp(payload.get("start"), 1) or record.sent_at
        return OwnerItem(
            "event", str(payload.get("event_id") or record.thread_key or ""), title,
            record.scope, record.id, start=start, end=_stamp(payload.get("end"), 1) or start,
        )  # fmt: skip
    if record.source == TASKS_UNIT:
        return OwnerItem(
            "task", str(payload.get("guid") or ""), title, record.scope, record.id,
            due=_stamp(payload.get("due"), 1000),
            completed_at=_stamp(payload.get("completed_at"), 1000),
        )  # fmt: skip
    return None


async def upcoming(tx: AsyncSession, now: datetime, until: datetime) -> list[OwnerItem]:
    """Events starting and open tasks due between `now` and `until`, soonest first."""
    events = await tx.scalars(
        select(SourceRecord)
        .where(
            SourceRecord.source == CALENDAR_UNIT,
            SourceRecord.sent_at >= now,
            SourceRecord.sent_at <= until,
        )
        .order_by(SourceRecord.sent_at)
        .limit(UPCOMING_SHOWN)
    )
    due = SourceRecord.payload["due"].as_string()
    done = SourceRecord.payload["completed_at"].as_string()
    tasks = await tx.scalars(
        select(SourceRecord)
        .where(
            SourceRecord.source == TASKS_UNIT,
            SourceRecord.sent_at.is_not(None),  # not a tombstone
            due >= _ms(now),
            due <= _ms(until),
            or_(done.is_(None), done.in_(("", "0"))),
        )
        .order_by(due)
        .limit(UPCOMING_SHOWN)
    )
    items = [i for r in [*events, *tasks] if (i := item_of(r)) is not None]
    return sorted(items, key=lambda i: i.start or i.due or now)[:UPCOMING_SHOWN]


async def current(tx: AsyncSession, kind: str, item_id: str) -> OwnerItem | None:
    """The event's or task's current version; None when it was never synced or is gone
    (a cancelled event, a deleted task: only tombstones are left)."""
    if kind == "event":
        where = [SourceRecord.source == CALENDAR_UNIT, SourceRecord.thread_key == item_id]
    else:
        escaped = escape_like(item_id)
        where = [
            SourceRecord.source == TASKS_UNIT,
            SourceRecord.external_id.like(f"{escaped}#u%", escape="\\"),
        ]
    rows = await tx.scalars(select(SourceRecord).where(*where).order_by(SourceRecord.id.desc()))
    for row in rows:
        item = item_of(row)
        if item is not None:
            return item
    return None


async def by_record(tx: AsyncSession, record_id: int) -> OwnerItem | None:
    """The event or task a record (`rec-N`) is a version of, as it stands now."""
    row = await tx.get(SourceRecord, record_id)
    item = item_of(row) if row is not None else None
    return await current(tx, item.kind, item.item_id) if item is not None else None
