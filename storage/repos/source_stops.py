"""Sources a forget stopped: what the owner had the assistant forget as a whole (a source or
a chat, with no person or date narrowing it) is not synced again until they turn it back on.

Stopping is a mark on the source row (`stopped_at`, `stopped_by`) written in the transaction
that stores the forget request. It also drops the row's sync request and its lease: a sync
running at that moment loses its lease, so its next page rolls back instead of storing
records the forget would have to chase. Every sync path reads the mark (`request_sync` and
the wanted claim skip stopped rows; the runner lets go of a stopped row it claimed by name).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import and_, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import Source
from storage.models import SourceRecord as Rec
from storage.repos import forgets, sources
from storage.repos._like import escape_like
from storage.repos.forgets import Selector


def stopped_line(row: Source) -> str | None:
    """Why a source is not synced any more (`stopped by forget #3 on 2026-12-06`), if so."""
    if row.stopped_at is None:
        return None
    return f"stopped by {row.stopped_by or 'a forget'} on {row.stopped_at:%Y-%m-%d}"


def whole(sel: Selector) -> bool:
    """A forget of a whole source or chat: the only kind that stops syncing (a person's or a
    date range's records are forgotten, and the source goes on syncing)."""
    return bool(sel.source or sel.chat) and not (sel.person or sel.since or sel.until)


async def _names(tx: AsyncSession, sel: Selector) -> list[str]:
    named = await forgets.titled(tx, sel)
    kept = select(Source.name).where(*forgets.naming(Source.name, sel, named))
    rows = set((await tx.scalars(kept)).all())
    # A source no sync has listed yet, whose records ingest wrote (a chat the bot is in):
    # stopped all the same, so its first observation does not start syncing it.
    stored = select(Rec.source).where(*forgets.naming(Rec.source, sel, named)).distinct()
    rows |= set((await tx.scalars(stored)).all())
    return sorted(str(n) for n in rows)


async def would_stop(tx: AsyncSession, sel: Selector) -> list[str]:
    """The sources a confirmed forget of `sel` would stop (those not stopped already)."""
    if not whole(sel):
        return []
    names = await _names(tx, sel)
    stopped = await stopped_among(tx, names)
    return [n for n in names if n not in stopped]


async def stop(tx: AsyncSession, sel: Selector, *, by: str, now: datetime) -> list[str]:
    """Stop syncing what `sel` names as a whole (nothing for a person or date range): the
    names stopped now."""
    names = await would_stop(tx, sel)
    for name in names:
        kind = name.split(":", 1)[0]
        await sources.ensure(tx, name=name, kind=kind, scope=None, title=None, now=now)
    if names:
        await tx.execute(
            update(Source)
            .where(Source.name.in_(names))
            .values(
                stopped_at=now,
                stopped_by=by,
                wanted_at=None,
                request=None,
                lease_owner=None,
                lease_expires_at=None,
                updated_at=now,
            )
        )
    return names


async def stopped(tx: AsyncSession, wanted: str) -> list[Source]:
    """The stopped sources `wanted` names: a source's name (all its units with it), a kind,
    or a chat's id or title."""
    escaped = escape_like(wanted)
    named = or_(
        Source.name == wanted,
        Source.name.like(f"{escaped}:%", escape="\\"),
        Source.name.like(f"%:{escaped}", escape="\\"),
        Source.title == wanted,
    )
    stmt = select(Source).where(and_(named, Source.stopped_at.is_not(None)))
    return list((await tx.scalars(stmt.order_by(Source.name))).all())


async def stopped_among(tx: AsyncSession, names: Sequence[str]) -> set[str]:
    """Which of these source names are stopped."""
    if not names:
        return set()
    stmt = select(Source.name).where(Source.name.in_(list(names)), Source.stopped_at.is_not(None))
    return set((await tx.scalars(stmt)).all())


async def resume(tx: AsyncSession, names: Sequence[str], now: datetime) -> None:
    """Turn these sources back on, and ask for their sync."""
    if not names:
        return
    await tx.execute(
        update(Source)
        .where(Source.name.in_(list(names)))
        .values(stopped_at=None, stopped_by=None, updated_at=now)
    )
    await sources.request_sync(tx, names, now, {"by": "resume"})


async def let_go(tx: AsyncSession, source_id: int, owner: str) -> None:
    """Give back the lease on a source claimed by name and found stopped: not run, nothing
    recorded on it."""
    await tx.execute(
        update(Source)
        .where(Source.id == source_id, Source.lease_owner == owner)
        .values(lease_owner=None, lease_expires_at=None)
    )
