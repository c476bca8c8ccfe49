"""Sources: one row per synced unit (a chat, a mailbox, a calendar), with its sync state.

A source row's `synced_cursor` only moves in the transaction that stores the records it
covers (storage/repos/source_records.py), and only while the writer holds the row's lease: a
sync that lost its lease (a stalled process) cannot move a cursor another process owns.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    String,
    bindparam,
    func,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from storage.claims import NOW, claim, lease_is_free, probe
from storage.models import Source
from storage.repos._upsert import insert_for
from storage.repos.source_records import kept_counts

ERROR_MAX_CHARS = 2000


async def ensure(
    tx: AsyncSession,
    *,
    name: str,
    kind: str,
    scope: str | None,
    title: str | None,
    now: datetime,
    observed_cursor: dict[str, Any] | None = None,
) -> None:
    """Create the source row, or refresh what observation tells about it (title, scope,
    observed cursor); the synced cursor and the error columns are left alone."""
    stmt = insert_for(tx, Source).values(
        name=name,
        kind=kind,
        scope=scope,
        title=title,
        observed_cursor=observed_cursor,
        record_count=0,
        created_at=now,
        updated_at=now,
    )
    changes: dict[str, Any] = {"updated_at": now}
    if title is not None:
        changes["title"] = title
    if scope is not None:
        changes["scope"] = scope
    if observed_cursor is not None:
        changes["observed_cursor"] = observed_cursor
    await tx.execute(stmt.on_conflict_do_update(index_elements=["name"], set_=changes))


async def get(tx: AsyncSession, name: str) -> Source | None:
    return await tx.scalar(select(Source).where(Source.name == name))


async def by_id(tx: AsyncSession, source_id: int) -> Source | None:
    return await tx.get(Source, source_id)


async def all_sources(tx: AsyncSession, kind: str | None = None) -> list[Source]:
    stmt = select(Source)
    if kind is not None:
        stmt = stmt.where(Source.kind == kind)
    return list((await tx.scalars(stmt.order_by(Source.kind, Source.name))).all())


async def titles(tx: AsyncSession, names: Sequence[str]) -> dict[str, str | None]:
    rows = await tx.execute(select(Source.name, Source.title).where(Source.name.in_(names)))
    return {str(n): t for n, t in rows.all()}


async def request_sync(
    tx: AsyncSession,
    names: Sequence[str],
    now: datetime,
    request: dict[str, Any] | None = None,
) -> int:
    """Ask for a sync of these sources (the sync workers pick it up); how many exist and
    are not stopped (a forgotten source: storage/repos/source_stops.py)."""
    if not names:
        return 0
    result = await tx.execute(
        update(Source)
        .where(Source.name.in_(list(names)), Source.stopped_at.is_(None))
        .values(wanted_at=now, request=request, updated_at=now)
    )
    return int(getattr(result, "rowcount", 0) or 0)


_WANTED = [Source.wanted_at.is_not(None), Source.wanted_at <= NOW, Source.stopped_at.is_(None)]
_HAS_WANTED = probe(Source, _WANTED)


async def has_wanted(tx: AsyncSession, now: datetime) -> bool:
    return await _HAS_WANTED.finds(tx, now=now)


_CLAIM_WANTED = claim(Source, _WANTED, [Source.wanted_at, Source.id])


async def claim_wanted(
    tx: AsyncSession, *, owner: str, now: datetime, lease: timedelta
) -> Source | None:
    """The longest-waiting requested source whose lease is free, now leased to `owner`."""
    rows = await _CLAIM_WANTED.take(tx, limit=1, owner=owner, lease=lease, now=now)
    return rows[0] if rows else None


# Not "name": a claim is an UPDATE, where a column's own name binds its new value.
_CLAIM_NAMED = claim(Source, [Source.name == bindparam("source_name", type_=String())], [Source.id])


async def claim_named(
    tx: AsyncSession, name: str, *, owner: str, now: datetime, lease: timedelta
) -> Source | None:
    """This source, leased to `owner`; None when it does not exist or someone else holds it."""
    rows = await _CLAIM_NAMED.take(tx, limit=1, owner=owner, lease=lease, now=now, source_name=name)
    return rows[0] if rows else None


async def holder(tx: AsyncSession, name: str, now: datetime) -> str | None:
    """Who holds this source's lease now (None when free)."""
    row = await tx.scalar(
        select(Source.lease_owner).where(Source.name == name, ~lease_is_free(Source, now))
    )
    return str(row) if row else None


async def renew(
    tx: AsyncSession, source_id: int, owner: str, *, now: datetime, lease: timedelta
) -> bool:
    result = await tx.execute(
        update(Source)
        .where(Source.id == source_id, Source.lease_owner == owner)
        .values(lease_expires_at=now + lease)
    )
    return bool(getattr(result, "rowcount", 0))


async def advance(
    tx: AsyncSession,
    source_id: int,
    owner: str,
    *,
    synced_cursor: dict[str, Any] | None,
    added: int,
    now: datetime,
    lease: timedelta,
) -> bool:
    """Move the synced cursor (in the transaction that stored the records it covers; None
    leaves it) and renew the lease; False when `owner` no longer holds the lease (then roll
    back)."""
    values: dict[str, Any] = {
        "record_count": Source.record_count + added,
        "lease_expires_at": now + lease,
        "updated_at": now,
    }
    if synced_cursor is not None:
        values["synced_cursor"] = synced_cursor
    result = await tx.execute(
        update(Source).where(Source.id == source_id, Source.lease_owner == owner).values(**values)
    )
    return bool(getattr(result, "rowcount", 0))


async def finish(
    tx: AsyncSession,
    source_id: int,
    owner: str,
    *,
    now: datetime,
    error: str | None,
    wanted_at: datetime | None,
    done: bool = True,
    observed_cursor: dict[str, Any] | None = None,
) -> bool:
    """End a run: record success or the error, give the lease back, and clear the request it
    served (unless it was requested again meanwhile). `done` False: stopped early (shutdown),
    neither a success nor an error, and the request stays open so the sync resumes."""
    values: dict[str, Any] = {"lease_owner": None, "lease_expires_at": None, "updated_at": now}
    if error is None and done:
        values.update(last_success_at=now, last_error=None)
        kept = kept_counts()
        values["record_count"] = func.coalesce(
            select(func.sum(kept.c.n)).where(kept.c.source == Source.name).scalar_subquery(),
            0,
        )
    elif error is not None:
        values.update(last_error=error[:ERROR_MAX_CHARS], last_error_at=now)
    if observed_cursor is not None:
        values["observed_cursor"] = observed_cursor
    result = await tx.execute(
        update(Source).where(Source.id == source_id, Source.lease_owner == owner).values(**values)
    )
    if not result.rowcount:  # type: ignore[attr-defined]
        return False
    if done and wanted_at is not None:
        await tx.execute(
            update(Source)
            .where(Source.id == source_id, Source.wanted_at == wanted_at)
            .values(wanted_at=None, request=None)
        )
    return True


async def record_error(tx: AsyncSession, names: Sequence[str], error: str, now: datetime) -> None:
    """Show an error on sources nobody is syncing right now (e.g. every mailbox when the
    login fails): their status must not read as "no changes"."""
    if not names:
        return
    await tx.execute(
        update(Source)
        .where(Source.name.in_(list(names)))
        .values(last_error=error[:ERROR_MAX_CHARS], last_error_at=now, updated_at=now)
    )


async def set_progress(
    tx: AsyncSession,
    name: str,
    *,
    synced_cursor: dict[str, Any] | None,
    now: datetime,
    error: str | None = None,
) -> None:
    """For a consumer of records kept as a source row (the search indexer): where it stands,
    and its last success or error."""
    values: dict[str, Any] = {"updated_at": now}
    if synced_cursor is not None:
        values["synced_cursor"] = synced_cursor
    if error is None:
        values.update(last_success_at=now, last_error=None)
    else:
        values.update(last_error=error[:ERROR_MAX_CHARS], last_error_at=now)
    await tx.execute(update(Source).where(Source.name == name).values(**values))


async def release(tx: AsyncSession, owner: str) -> int:
    result = await tx.execute(
        update(Source)
        .where(Source.lease_owner == owner)
        .values(lease_owner=None, lease_expires_at=None)
    )
    return int(getattr(result, "rowcount", 0) or 0)
