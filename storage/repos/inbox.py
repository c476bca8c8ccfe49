"""Inbox items: durable input for a conversation's Bot or a task Session."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple, cast

from sqlalchemy import (
    Integer,
    Select,
    String,
    Table,
    bindparam,
    exists,
    func,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.expression import ColumnElement, Exists

from storage.claims import NOW
from storage.models import HANDLED_NOTICE, Admin, InboxItem
from storage.repos._lists import in_list, not_in_list
from storage.repos._upsert import insert_for
from storage.types import UTCDateTime, utcnow

_ITEMS = cast(Table, InboxItem.__table__)


async def append(
    tx: AsyncSession,
    *,
    kind: str,
    payload: dict[str, Any],
    conversation_id: int | None = None,
    session_id: int | None = None,
    dedupe_key: str | None = None,
    created_at: datetime,
) -> int | None:
    """The new item's id; None when `dedupe_key` was appended before (an idempotent retry)."""
    stmt = insert_for(tx, InboxItem).values(
        kind=kind,
        payload=payload,
        conversation_id=conversation_id,
        session_id=session_id,
        dedupe_key=dedupe_key,
        created_at=created_at,
    )
    if dedupe_key is not None:
        stmt = stmt.on_conflict_do_nothing(index_elements=["dedupe_key"])
    return (await tx.execute(stmt.returning(InboxItem.id))).scalar_one_or_none()


def message_key(platform: str, message_id: str) -> str:
    """A chat message's inbox item's dedupe key: the key ingest writes, and the one a recall
    or a forget finds (or blocks) the item by."""
    return f"{platform}:{message_id}"


@dataclass(frozen=True)
class NewItem:
    kind: str
    payload: dict[str, Any]
    conversation_id: int | None
    dedupe_key: str
    created_at: datetime
    session_id: int | None = None


async def append_many(tx: AsyncSession, items: Sequence[NewItem]) -> dict[str, int]:
    """One multi-row insert of idempotent items; dedupe key -> id for those that were new."""
    if not items:
        return {}
    # Hot path (ingest): compiled once, batched into multi-row VALUES by SQLAlchemy.
    table = InboxItem.__table__
    stmt = (
        insert_for(tx, table)
        .on_conflict_do_nothing(index_elements=["dedupe_key"])
        .returning(table.c.dedupe_key, table.c.id)
    )
    result = await tx.execute(stmt, [dict(vars(i)) for i in items])
    return {str(k): int(v) for k, v in result.all()}


class Pending(NamedTuple):
    """An undelivered item, as a turn reads it."""

    id: int
    kind: str
    payload: dict[str, Any]
    created_at: datetime
    attempts: int  # failed turns over it so far
    listed_admin: bool  # its sender (`payload["sender_id"]`) is in the admins table


# An item that failed waits out its backoff: until then it is not waiting, and the rest of its
# conversation is answered without it.
_RETRY_DUE = or_(_ITEMS.c.retry_at.is_(None), _ITEMS.c.retry_at <= NOW)

_ADMINS = cast(Table, Admin.__table__)
# Read with each item: a turn would otherwise ask for every message of its batch, one query
# each, what the sender's role is.
_LISTED_ADMIN = (
    exists()
    .where(_ADMINS.c.open_id == _ITEMS.c.payload["sender_id"].as_string())
    .label("listed_admin")
)


async def pending_for_conversation(
    tx: AsyncSession, conversation_id: int, limit: int = 100, *, now: datetime | None = None
) -> list[Pending]:
    """A conversation's next batch (`pending_for_conversations`)."""
    found = await pending_for_conversations(tx, [conversation_id], limit, now=now)
    return found.get(conversation_id, [])


# The Bot's hot path reads, built once, on the table (not the ORM entity), bound per call
# (building a statement and its cache key, and loading ORM objects, cost more than running
# it); for several conversations in one statement (a group of Bot turns), each one's first
# `limit` items, numbered within their conversation.
_NUMBERED = (
    select(
        *(_ITEMS.c[f] for f in Pending._fields[:-1]),
        _LISTED_ADMIN,
        _ITEMS.c.conversation_id,
        func.row_number()
        .over(partition_by=_ITEMS.c.conversation_id, order_by=_ITEMS.c.id)
        .label("nth"),
    )
    .where(
        in_list(_ITEMS.c.conversation_id, "conversation_ids"),
        _ITEMS.c.delivered_at.is_(None),
        _RETRY_DUE,
    )
    .subquery()
)
_PENDING_FOR_EACH = (
    select(_NUMBERED)
    .where(_NUMBERED.c.nth <= bindparam("limit", type_=Integer()))
    .order_by(_NUMBERED.c.id)
)


async def pending_for_conversations(
    tx: AsyncSession,
    conversation_ids: Collection[int],
    limit: int = 100,
    *,
    now: datetime | None = None,
) -> dict[int, list[Pending]]:
    """Each conversation's next batch, in one statement: its first `limit` undelivered items
    not waiting out a backoff, oldest first, of the first one's thread only (`thread_of`: a
    thread in a chat is a context of its own; the chat's other items wait for the next
    turn); or, when one of them failed before, that one alone (a good message batched with
    one that fails is answered on its own retry, not parked with it). A conversation with
    nothing waiting is left out."""
    if not conversation_ids:
        return {}
    found: dict[int, list[Pending]] = {}
    bound = {"conversation_ids": list(conversation_ids), "limit": limit, "now": now or utcnow()}
    for row in await tx.execute(_PENDING_FOR_EACH, bound):
        pending = Pending(
            row.id, row.kind, row.payload, row.created_at, row.attempts, bool(row.listed_admin)
        )
        found.setdefault(row.conversation_id, []).append(pending)
    for conversation_id, items in found.items():
        thread = thread_of(items[0].payload)
        items = [item for item in items if thread_of(item.payload) == thread]
        retried = next((item for item in items if item.attempts), None)
        found[conversation_id] = [retried] if retried is not None else items
    return found


def thread_of(payload: dict[str, Any]) -> str | None:
    """The thread an item belongs to (a Feishu topic's `thread_id`), or None for the chat
    itself (notices, clicks and messages outside any thread)."""
    thread = payload.get("thread_id")
    return str(thread) if thread else None


# Which conversations are ready for a turn, asked by the Bot for every free slot. The database
# decides, not this process: the oldest-first scan of every waiting conversation (two times
# each to parse and compare in Python, up to a few hundred rows a claim) cost as much CPU as
# the turns themselves under a backlog. A conversation is ready when its input has been quiet
# since `quiet_since`, or its first waiting item came before `waited_since`.
_WAITING_ITEMS = (
    _ITEMS.c.conversation_id.is_not(None),
    _ITEMS.c.delivered_at.is_(None),
    _RETRY_DUE,
    not_in_list(_ITEMS.c.conversation_id, "skip"),
)
_OLDEST, _NEWEST = func.min(_ITEMS.c.created_at), func.max(_ITEMS.c.created_at)
_QUIET_SINCE = bindparam("quiet_since", type_=UTCDateTime())
_WAITED_SINCE = bindparam("waited_since", type_=UTCDateTime())
# Of a conversation's waiting items grouped: its burst is over (quiet, or waited too long).
_BURST_OVER = or_(_OLDEST <= _WAITED_SINCE, _NEWEST <= _QUIET_SINCE)


def _per_waiting_conversation(*columns: ColumnElement[Any]) -> Select[Any]:
    return select(*columns).where(*_WAITING_ITEMS).group_by(_ITEMS.c.conversation_id)


# The conversations' first waiting items, oldest first (`ix_inbox_items_waiting_order`), each
# checked on its own conversation's waiting items (`ix_inbox_items_waiting`): the walk stops at
# `limit` ready ones, so a claim costs what it takes, not what waits. Grouping every waiting
# item to find them (as `_GATHERING` still does, asked only when fewer than asked are ready,
# and PostgreSQL's claim, below) took half SQLite's Bot database time under a backlog of a
# thousand conversations. The `conversation_id IS NOT NULL` said again in the subqueries lets
# PostgreSQL use the partial indexes when it hashes a subquery instead of running it per row.
_LATER = _ITEMS.alias("later")
_FIRST = select(_ITEMS.c.conversation_id).where(*_WAITING_ITEMS)


def _same_conversation_waits(where: ColumnElement[bool]) -> Exists:
    """Whether an item of the same conversation (this one included) waits and meets `where`."""
    return (
        select(_LATER.c.id)
        .where(
            _LATER.c.conversation_id == _ITEMS.c.conversation_id,
            _LATER.c.conversation_id.is_not(None),
            _LATER.c.delivered_at.is_(None),
            or_(_LATER.c.retry_at.is_(None), _LATER.c.retry_at <= NOW),
            where,
        )
        .exists()
    )


_HAS_EARLIER = _same_conversation_waits(_LATER.c.id < _ITEMS.c.id)
_NOT_QUIET = _same_conversation_waits(_LATER.c.created_at > _QUIET_SINCE)
_READY = (
    _FIRST.where(~_HAS_EARLIER, or_(_ITEMS.c.created_at <= _WAITED_SINCE, ~_NOT_QUIET))
    .order_by(_ITEMS.c.id)
    .limit(bindparam("limit", type_=Integer()))
)
# PostgreSQL's planner picks the walk's plan from its statistics of the partial indexes, and
# those date from when few items waited (an ANALYZE at a quiet moment, or none yet): a backlog
# then looks like two rows, each conversation's EXISTS scans every waiting item, and a claim
# over 3,000 of them took 1.5 s of the server's CPU (0.2 ms with statistics of the backlog).
# So PostgreSQL groups the waiting items, whatever the planner believes: one pass, ~1 µs an
# item. SQLite plans by the indexes alone and walks (0.05 ms, where grouping took 4 ms).
_READY_GROUPED = (
    _per_waiting_conversation(_ITEMS.c.conversation_id)
    .having(_BURST_OVER)
    .order_by(func.min(_ITEMS.c.id))
    .limit(bindparam("limit", type_=Integer()))
)
_GATHERING = (
    _per_waiting_conversation(_OLDEST.label("oldest"), _NEWEST.label("newest"))
    .having(~_BURST_OVER)
    .subquery()
)
_FIRST_GATHERING = select(func.min(_GATHERING.c.oldest), func.min(_GATHERING.c.newest))


@dataclass(frozen=True)
class Readiness:
    """When a waiting conversation becomes ready: `debounce` after its latest item, or
    `longest` after its oldest, whichever comes first."""

    now: datetime
    debounce: timedelta
    longest: timedelta

    def bound(self, skip: Collection[int]) -> dict[str, object]:
        return {
            "skip": list(skip),
            "now": self.now,
            "quiet_since": self.now - self.debounce,
            "waited_since": self.now - self.longest,
        }


async def ready_conversations(
    tx: AsyncSession, readiness: Readiness, *, skip: Collection[int], limit: int
) -> list[int]:
    """Up to `limit` conversations ready now (not those in `skip`), the one whose input came
    first first."""
    bound = {**readiness.bound(skip), "limit": limit}
    stmt = _READY_GROUPED if tx.get_bind().dialect.name == "postgresql" else _READY
    return [int(cid) for cid in (await tx.scalars(stmt, bound)).all()]


async def next_ready_at(
    tx: AsyncSession, readiness: Readiness, *, skip: Collection[int]
) -> datetime | None:
    """When the first conversation still gathering its burst, or the first item waiting out
    its backoff (not in `skip`), becomes ready; None if none will."""
    bound = readiness.bound(skip)
    oldest, newest = (await tx.execute(_FIRST_GATHERING, bound)).one()
    times = [t + d for t, d in ((oldest, readiness.longest), (newest, readiness.debounce)) if t]
    if retry := await tx.scalar(_FIRST_RETRY, bound):
        times.append(retry)
    return min(times, default=None)


# Through `ix_inbox_items_retrying`, whose condition it repeats (each database must see it).
_FIRST_RETRY = select(func.min(_ITEMS.c.retry_at)).where(
    text("delivered_at IS NULL AND retry_at IS NOT NULL"),
    _ITEMS.c.conversation_id.is_not(None),
    _ITEMS.c.retry_at > NOW,
    not_in_list(_ITEMS.c.conversation_id, "skip"),
)


@dataclass(frozen=True)
class Failed:
    """An item a failed turn had in its batch, after the failure was recorded."""

    id: int
    conversation_id: int | None
    payload: dict[str, Any]
    attempts: int
    parked: bool  # tried often enough: given up on, and the conversation goes on


async def record_failures(
    tx: AsyncSession,
    item_ids: Collection[int],
    *,
    error: str,
    now: datetime,
    retry_in: Callable[[int], timedelta],
    park_after: int,
    counted: bool = True,
) -> list[Failed]:
    """Count a failed turn against each undelivered item of its batch: tried again no sooner
    than `retry_in(attempts)`, or parked (delivered, `batch_id` "parked", kept with its
    error) once it has failed `park_after` times. Not `counted` (the failure was an outage,
    not the item's): backed off as after its last failure, never parked for it."""
    rows = (
        await tx.execute(
            select(_ITEMS.c.id, _ITEMS.c.conversation_id, _ITEMS.c.payload, _ITEMS.c.attempts)
            .where(_ITEMS.c.id.in_(list(item_ids)), _ITEMS.c.delivered_at.is_(None))
            .order_by(_ITEMS.c.id)
        )
    ).all()
    failed: list[Failed] = []
    for row in rows:
        attempts = row.attempts + 1 if counted else row.attempts
        parked = counted and attempts >= park_after
        values: dict[str, Any] = {"attempts": attempts, "last_error": error[:ERROR_CHARS]}
        if parked:
            values.update(delivered_at=now, batch_id=PARKED, parked_at=now, retry_at=None)
        else:
            values["retry_at"] = now + retry_in(max(1, attempts))
        await tx.execute(update(_ITEMS).where(_ITEMS.c.id == row.id).values(**values))
        failed.append(Failed(row.id, row.conversation_id, row.payload, attempts, parked))
    return failed


PARKED = "parked"  # the batch id of a parked item
ERROR_CHARS = 2000


async def parked(
    tx: AsyncSession, limit: int, conversation_id: int | None = None
) -> list[InboxItem]:
    """The newest parked items (`ix_inbox_items_parked`): all of them, or one conversation's."""
    stmt = select(InboxItem).where(InboxItem.parked_at.is_not(None))
    if conversation_id is not None:
        stmt = stmt.where(InboxItem.conversation_id == conversation_id)
    return list((await tx.scalars(stmt.order_by(InboxItem.id.desc()).limit(limit))).all())


async def count_parked(tx: AsyncSession, conversation_id: int | None = None) -> int:
    stmt = select(func.count(InboxItem.id)).where(InboxItem.parked_at.is_not(None))
    if conversation_id is not None:
        stmt = stmt.where(InboxItem.conversation_id == conversation_id)
    return int(await tx.scalar(stmt) or 0)


async def mark_delivered(
    tx: AsyncSession, item_ids: list[int], batch_id: str, now: datetime
) -> None:
    """Items handled by a turn (`batch_id`); those marked before stay as they were."""
    await mark_delivered_each(tx, [(item_ids, batch_id)], now)


_MARK_ONE_DELIVERED = (
    update(_ITEMS)
    .where(_ITEMS.c.id == bindparam("item_id", type_=Integer()), _ITEMS.c.delivered_at.is_(None))
    .values(delivered_at=NOW, batch_id=bindparam("batch_id", type_=String()))
)


async def mark_delivered_each(
    tx: AsyncSession, batches: Sequence[tuple[Collection[int], str]], now: datetime
) -> None:
    """`mark_delivered` of several batches (item ids, batch id), in one executemany."""
    rows = [
        {"item_id": item_id, "batch_id": batch_id, "now": now}
        for item_ids, batch_id in batches
        for item_id in item_ids
    ]
    if rows:
        await tx.execute(_MARK_ONE_DELIVERED, rows)


async def count_pending(tx: AsyncSession, conversation_id: int | None = None) -> int:
    """Undelivered items: all of them, or one conversation's."""
    stmt = select(func.count(InboxItem.id)).where(InboxItem.delivered_at.is_(None))
    if conversation_id is not None:
        stmt = stmt.where(InboxItem.conversation_id == conversation_id)
    return int(await tx.scalar(stmt) or 0)


async def has_recent(
    tx: AsyncSession, conversation_id: int, kinds: Sequence[str], since: datetime
) -> bool:
    """Whether items of these kinds reached the conversation since a moment."""
    stmt = select(InboxItem.id).where(
        InboxItem.conversation_id == conversation_id,
        InboxItem.kind.in_(list(kinds)),
        InboxItem.created_at >= since,
    )
    return (await tx.scalar(stmt.limit(1))) is not None


async def handled_notices(tx: AsyncSession, limit: int) -> list[InboxItem]:
    """The newest notices (not users' messages) the Bot handled in a conversation, through
    their partial index: the condition is the index's own text, which each database must see
    to use the index (a bound parameter in its place would not prove it)."""
    stmt = select(InboxItem).where(text(HANDLED_NOTICE)).order_by(InboxItem.id.desc()).limit(limit)
    return list((await tx.scalars(stmt)).all())
