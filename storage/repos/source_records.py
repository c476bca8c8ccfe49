"""Source records: the originals (chat messages, mails, calendar events) synced or ingested,
and the tombstones that replace the ones taken back.

Records are unique per (`source`, `external_id`) and written with one multi-row
`INSERT … ON CONFLICT DO NOTHING`, so webhook ingest and history sync can write the same
message in either order and it is stored once; a record removed (recalled, changed at its
source, forgotten) leaves a tombstone under its key, so neither can bring it back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    String,
    and_,
    cast,
    delete,
    func,
    literal,
    or_,
    select,
    text,
    union_all,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import SourceRecord, SourceRecordCount, SourceRecordCountChange
from storage.repos._like import escape_like
from storage.repos._upsert import insert_for


@dataclass(frozen=True, slots=True)
class NewRecord:
    source: str
    external_id: str
    scope: str
    text: str
    sent_at: datetime | None
    author: str | None = None
    title: str | None = None
    thread_key: str | None = None
    payload: dict[str, Any] = field(default_factory=dict)

    def row(self, now: datetime) -> dict[str, Any]:
        return {
            "source": self.source,
            "external_id": self.external_id,
            "scope": self.scope,
            "title": self.title,
            "text": self.text,
            "author": self.author,
            "sent_at": self.sent_at,
            "thread_key": self.thread_key,
            "payload": self.payload,
            "created_at": now,
        }


# ---- records ------------------------------------------------------------------------------


_INSERTS: dict[tuple[str, bool], Any] = {}


def _insert(tx: AsyncSession, returning: bool) -> Any:
    """The insert statement, built once per dialect: statements are immutable, and building
    one (and its cache key) for every ingest batch is measurable on the hot path."""
    key = (tx.get_bind().dialect.name, returning)
    stmt = _INSERTS.get(key)
    if stmt is None:
        table = SourceRecord.__table__  # Core, not the ORM's bulk path: ingest is a hot path
        stmt = insert_for(tx, table).on_conflict_do_nothing(
            index_elements=["source", "external_id"]
        )
        if returning:
            stmt = stmt.returning(table.c.id, table.c.source, table.c.external_id)
        _INSERTS[key] = stmt
    return stmt


# The notification topic a writer of records publishes, so the search follower wakes now
# rather than on its next poll.
RECORDS_TOPIC = "source-index"


async def insert_records(
    tx: AsyncSession, records: Sequence[NewRecord], now: datetime
) -> list[tuple[int, str, str]]:
    """One multi-row insert; (id, source, external_id) of the rows that were new.

    The rows go as executemany parameters, not `.values([...])`: SQLAlchemy then compiles the
    statement once and sends the rows as multi-row VALUES pages ("insertmanyvalues"), while a
    `.values()` list is compiled again on every call, which costs more than the database's
    own work (about 0.2 ms a row)."""
    if not records:
        return []
    result = await tx.execute(_insert(tx, True), [r.row(now) for r in records])
    return [(int(i), str(s), str(e)) for i, s, e in result.all()]


async def add_records(tx: AsyncSession, records: Sequence[NewRecord], now: datetime) -> None:
    """`insert_records` for callers that need not know which rows were new (ingest)."""
    if records:
        await tx.execute(_insert(tx, False), [r.row(now) for r in records])


async def records_after(
    tx: AsyncSession, after_id: int, limit: int, sources: Sequence[str] | None = None
) -> list[SourceRecord]:
    """Records in `seq` order after `after_id` (for re-indexing and coverage scans)."""
    stmt = select(SourceRecord).where(SourceRecord.id > after_id)
    if sources is not None:
        stmt = stmt.where(SourceRecord.source.in_(list(sources)))
    return list((await tx.scalars(stmt.order_by(SourceRecord.id).limit(limit))).all())


async def records_between(
    tx: AsyncSession, ranges: Sequence[tuple[int, int]], limit: int
) -> list[SourceRecord]:
    """Records whose seq lies in any of the inclusive `ranges` (gaps that filled in later)."""
    if not ranges:
        return []
    stmt = (
        select(SourceRecord)
        .where(or_(*(SourceRecord.id.between(a, b) for a, b in ranges)))
        .order_by(SourceRecord.id)
        .limit(limit)
    )
    return list((await tx.scalars(stmt)).all())


async def max_seq(tx: AsyncSession) -> int:
    return int(await tx.scalar(select(func.max(SourceRecord.id))) or 0)


async def count_records(tx: AsyncSession, source: str | None = None) -> int:
    stmt = select(func.count(SourceRecord.id))
    if source is not None:
        stmt = stmt.where(SourceRecord.source == source)
    return int(await tx.scalar(stmt) or 0)


def kept_counts() -> Any:
    """The counts the triggers keep and the changes not folded yet, as (source, n) rows."""
    return union_all(
        select(SourceRecordCount.source, SourceRecordCount.records.label("n")),
        select(SourceRecordCountChange.source, SourceRecordCountChange.change.label("n")),
    ).subquery()


async def counts_by_source(tx: AsyncSession) -> dict[str, int]:
    """Records per source (tombstones included), from the counts the triggers keep
    (storage.models.SourceRecordCount): a row a source and the few changes not folded yet,
    however many records."""
    kept = kept_counts()
    total = func.sum(kept.c.n)
    rows = await tx.execute(select(kept.c.source, total).group_by(kept.c.source).having(total > 0))
    return {str(s): int(n) for s, n in rows.all()}


_FOLD = text(
    """
    WITH folded AS (DELETE FROM source_record_count_changes RETURNING source, change)
    INSERT INTO source_record_counts (source, records)
    SELECT source, sum(change) FROM folded GROUP BY source ORDER BY source
    ON CONFLICT (source) DO UPDATE
        SET records = source_record_counts.records + EXCLUDED.records
    """
)


async def fold_record_counts(tx: AsyncSession) -> int:
    """Fold the counts' pending changes (PostgreSQL's triggers append them) into the counts;
    how many sources changed. Two folders at once: the second skips the changes the first
    deleted, so nothing is counted twice. SQLite's triggers update the counts themselves."""
    if tx.get_bind().dialect.name != "postgresql":
        return 0
    result = await tx.execute(_FOLD)
    return int(getattr(result, "rowcount", 0) or 0)


# ---- removal (a recalled message) ---------------------------------------------------------

TOMBSTONE = {"deleted": True}


def is_tombstone(payload: dict[str, Any] | None) -> bool:
    """A record that stands for one removed (a recalled message): the search follower deletes
    its document instead of indexing it, and nothing shows it. History sync's records of
    messages Feishu lists as recalled say the same (`deleted`)."""
    return bool(isinstance(payload, dict) and payload.get("deleted"))


def _of_message(source: str, message_id: str) -> ColumnElement[bool]:
    """The message's record and those beside it (`<message_id>#att:…`, `<message_id>#forward`)."""
    escaped = escape_like(message_id)
    return and_(
        SourceRecord.source == source,
        or_(
            SourceRecord.external_id == message_id,
            SourceRecord.external_id.like(f"{escaped}#%", escape="\\"),
        ),
    )


async def remove_message(
    tx: AsyncSession,
    source: str,
    message_id: str,
    *,
    scope: str,
    now: datetime,
    keep: str | None = None,
) -> list[int]:
    """Replace the message's records (and its attachments' and forward's) by tombstones: each
    row deleted, and a row with the same (source, external_id), no text and payload
    {"deleted": true} inserted with a new seq, so the search follower deletes the document on
    whatever replica runs it, and a later sync or a late delivery (`ON CONFLICT DO NOTHING`)
    cannot bring it back. A message never stored gets its tombstone all the same. Returns the
    seqs removed (to drop from what cites them).

    `keep`: the item's current version (an item synced in versions, like a calendar event
    `<event_id>#v<digest>`: a moved event is a new version, the old ones leave search), which
    the caller stores next: not removed, and if it was removed before (an event moved back
    to its old time), its tombstone goes so the version can be stored again with a new seq."""
    rows = (
        await tx.execute(
            select(SourceRecord.id, SourceRecord.external_id, SourceRecord.scope).where(
                _of_message(source, message_id)
            )
        )
    ).all()
    if keep is not None:
        kept = await tx.execute(
            select(SourceRecord.id, SourceRecord.payload).where(
                SourceRecord.source == source, SourceRecord.external_id == keep
            )
        )
        for kept_id, payload in kept.all():
            if is_tombstone(payload):
                await tx.execute(delete(SourceRecord).where(SourceRecord.id == kept_id))
        rows = [r for r in rows if r.external_id != keep]
    scopes = {str(r.external_id): str(r.scope) for r in rows}
    scopes.setdefault(message_id, scope)
    return await _replace_by_tombstones(
        tx, [int(r.id) for r in rows], [(source, e, s) for e, s in scopes.items()], now
    )


async def remove_records(
    tx: AsyncSession, records: Sequence[tuple[int, str, str, str]], now: datetime
) -> list[int]:
    """Replace these records ((seq, source, external_id, scope)) by tombstones, as
    `remove_message` does (a forget: storage/repos/forgets.py). Returns their seqs."""
    return await _replace_by_tombstones(
        tx, [r[0] for r in records], [(r[1], r[2], r[3]) for r in records], now
    )


async def _replace_by_tombstones(
    tx: AsyncSession, removed: list[int], keys: list[tuple[str, str, str]], now: datetime
) -> list[int]:
    """Delete the rows `removed`, and store a tombstone for each (source, external_id, scope)."""
    if removed:  # out of the tombstones' way, deleted only once they are in
        await tx.execute(
            update(SourceRecord)
            .where(SourceRecord.id.in_(removed))
            .values(external_id=literal("#removed-") + cast(SourceRecord.id, String))
        )
    tombstones = [
        NewRecord(source, external_id, row_scope, "", None, payload=dict(TOMBSTONE))
        for source, external_id, row_scope in keys
    ]
    # Inserted while the rows they replace still exist: SQLite gives a new row the highest
    # rowid + 1, and with the highest row deleted first a tombstone would get its very seq,
    # which the follower has passed.
    await add_records(tx, tombstones, now)
    if removed:
        await tx.execute(delete(SourceRecord).where(SourceRecord.id.in_(removed)))
    return removed
