"""Memory indexes, their entries, and the records a range covers.

An index is claimed for maintenance like any other work (`storage/claims.py`): due when not
paused and its `next_check_at` has come (or was never set). Entries are written with an
expected revision: 0 creates, N replaces revision N; anything else is a conflict the writer
sees, so a replayed write or a stale writer changes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, Text, cast, delete, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from storage.claims import NOW, claim, probe
from storage.models import IndexEntry, MemoryIndex, Session, SourceRecord
from storage.repos._upsert import insert_for
from storage.seq_gaps import Range, missing_ranges

INDEXER = "indexer"  # the role of an index's own Session


async def create(
    tx: AsyncSession,
    *,
    name: str,
    criteria: str,
    scopes: list[str] | None,
    conversation_id: int | None,
    created_by: str | None,
    interval_seconds: int,
    now: datetime,
) -> MemoryIndex | None:
    """The new index; None when the name is taken."""
    stmt = (
        insert_for(tx, MemoryIndex)
        .values(
            name=name,
            criteria=criteria,
            scopes=scopes,
            conversation_id=conversation_id,
            created_by=created_by,
            interval_seconds=interval_seconds,
            status="pending",
            paused=False,
            covered_cursor=0,
            ready_notified=False,
            created_at=now,
            updated_at=now,
        )
        .on_conflict_do_nothing(index_elements=["name"])
        .returning(MemoryIndex.id)
    )
    new_id = (await tx.execute(stmt)).scalar_one_or_none()
    return None if new_id is None else await tx.get(MemoryIndex, new_id)


async def by_name(tx: AsyncSession, name: str) -> MemoryIndex | None:
    return await tx.scalar(
        select(MemoryIndex)
        .where(MemoryIndex.name == name)
        .execution_options(populate_existing=True)
    )


async def all_indexes(tx: AsyncSession) -> list[MemoryIndex]:
    return list((await tx.scalars(select(MemoryIndex).order_by(MemoryIndex.name))).all())


_DUE = [
    MemoryIndex.paused.is_(False),
    or_(MemoryIndex.next_check_at.is_(None), MemoryIndex.next_check_at <= NOW),
]
_HAS_DUE = probe(MemoryIndex, _DUE)


async def has_due(tx: AsyncSession, now: datetime) -> bool:
    return await _HAS_DUE.finds(tx, now=now)


_CLAIM_DUE = claim(MemoryIndex, _DUE, [MemoryIndex.next_check_at, MemoryIndex.id])


async def claim_due(
    tx: AsyncSession, *, owner: str, lease: timedelta, now: datetime
) -> MemoryIndex | None:
    rows = await _CLAIM_DUE.take(tx, limit=1, owner=owner, lease=lease, now=now)
    return rows[0] if rows else None


def _in_scopes(scopes: Sequence[str] | None) -> list[ColumnElement[bool]]:
    return [] if scopes is None else [SourceRecord.scope.in_(list(scopes))]


@dataclass(frozen=True)
class Backlog:
    count: int
    last_seq: int


async def backlog(tx: AsyncSession, scopes: Sequence[str] | None, after: int) -> Backlog:
    """How many records of the scopes came after `after`, and the newest one's seq."""
    count, last = (
        await tx.execute(
            select(func.count(SourceRecord.id), func.max(SourceRecord.id)).where(
                SourceRecord.id > after, *_in_scopes(scopes)
            )
        )
    ).one()
    return Backlog(int(count or 0), int(last or after))


async def missing_seqs(
    tx: AsyncSession, after: int, upto: int, *, young_since: datetime
) -> list[Range]:
    """Record ids in (`after`, `upto`] with no record yet that may still appear, whatever
    its scope: a record of any scope may fill one."""
    return await missing_ranges(
        tx, SourceRecord.id, SourceRecord.created_at, after, upto, young_since=young_since
    )


async def records_in_range(
    tx: AsyncSession, scopes: Sequence[str] | None, after: int, upto: int, limit: int
) -> list[SourceRecord]:
    return list(
        (
            await tx.scalars(
                select(SourceRecord)
                .where(SourceRecord.id > after, SourceRecord.id <= upto, *_in_scopes(scopes))
                .order_by(SourceRecord.id)
                .limit(limit)
            )
        ).all()
    )


async def count_in_range(
    tx: AsyncSession, scopes: Sequence[str] | None, after: int, upto: int
) -> int:
    return int(
        await tx.scalar(
            select(func.count(SourceRecord.id)).where(
                SourceRecord.id > after, SourceRecord.id <= upto, *_in_scopes(scopes)
            )
        )
        or 0
    )


async def entries(
    tx: AsyncSession, index_id: int, *, contains: str | None = None, limit: int = 50
) -> list[IndexEntry]:
    stmt = select(IndexEntry).where(IndexEntry.index_id == index_id)
    if contains:
        pattern = f"%{contains.lower()}%"
        stmt = stmt.where(
            or_(func.lower(IndexEntry.key).like(pattern), func.lower(IndexEntry.text).like(pattern))
        )
    return list((await tx.scalars(stmt.order_by(IndexEntry.key).limit(limit))).all())


async def count_entries(tx: AsyncSession, index_id: int) -> int:
    stmt = select(func.count(IndexEntry.id)).where(IndexEntry.index_id == index_id)
    return int(await tx.scalar(stmt) or 0)


@dataclass(frozen=True)
class EntryWrite:
    ok: bool
    revision: int  # the entry's revision now (0: it does not exist)


async def write_entry(
    tx: AsyncSession,
    index_id: int,
    *,
    key: str,
    text: str,
    refs: list[int],
    expected_revision: int,
    now: datetime,
) -> EntryWrite:
    if expected_revision == 0:
        stmt = (
            insert_for(tx, IndexEntry)
            .values(index_id=index_id, key=key, text=text, refs=refs, revision=1, updated_at=now)
            .on_conflict_do_nothing(index_elements=["index_id", "key"])
            .returning(IndexEntry.id)
        )
        if (await tx.execute(stmt)).scalar_one_or_none() is not None:
            return EntryWrite(True, 1)
    else:
        result = await tx.execute(
            update(IndexEntry)
            .where(
                IndexEntry.index_id == index_id,
                IndexEntry.key == key,
                IndexEntry.revision == expected_revision,
            )
            .values(text=text, refs=refs, revision=expected_revision + 1, updated_at=now)
        )
        if getattr(result, "rowcount", 0):
            return EntryWrite(True, expected_revision + 1)
    current = await tx.scalar(
        select(IndexEntry.revision).where(IndexEntry.index_id == index_id, IndexEntry.key == key)
    )
    return EntryWrite(False, int(current or 0))


async def drop(tx: AsyncSession, index_id: int) -> None:
    await tx.execute(delete(IndexEntry).where(IndexEntry.index_id == index_id))
    await tx.execute(delete(MemoryIndex).where(MemoryIndex.id == index_id))


async def indexer_session(tx: AsyncSession, index: MemoryIndex, now: datetime) -> int:
    """The index's own Session (role `indexer`, never a WorkHub candidate), made on first
    use; its id."""
    if index.session_id is not None:
        return index.session_id
    created = Session(
        name=f"index: {index.name}",
        role=INDEXER,
        state="active",
        conversation_id=index.conversation_id,
        labels=[],
        is_archived=False,
        created_at=now,
        status_updated_at=now,
    )
    tx.add(created)
    await tx.flush()
    index.session_id = created.id
    return created.id


async def forget_records(
    tx: AsyncSession, seqs: Sequence[int], now: datetime, *, whole: bool = False
) -> int:
    """Records removed (a recalled message): entries citing them lose those refs, and an
    entry left with none is deleted (what it said came from them alone); `whole` (the owner's
    forget): every entry citing them is deleted, as its text may repeat theirs. How many
    entries changed. Refs are a JSON list, so the candidates are found by their text and checked
    here: recalls are rare, and an index's entries few."""
    gone = set(seqs)
    if not gone:
        return 0
    as_text = cast(IndexEntry.refs, Text)
    found = await tx.scalars(
        select(IndexEntry).where(or_(*(as_text.like(f"%{seq}%") for seq in sorted(gone))))
    )
    changed = 0
    for entry in found.all():
        refs = [r for r in entry.refs or [] if r not in gone]
        if len(refs) == len(entry.refs or []):
            continue  # another number that merely contains the digits
        changed += 1
        if not refs or whole:
            await tx.execute(delete(IndexEntry).where(IndexEntry.id == entry.id))
        else:
            await tx.execute(
                update(IndexEntry)
                .where(IndexEntry.id == entry.id)
                .values(refs=refs, revision=entry.revision + 1, updated_at=now)
            )
    return changed
