"""The outbox: what the assistant decided to say, delivered by a sender worker.

The idempotency key becomes Feishu's `uuid`, so a resend after a crash is not a second
message. States: pending → (claimed) → sent | failed | uncertain. A chat's rows are claimed
in the order they were written, one at a time (`_DUE`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import String, Table, Text, bindparam, exists, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from storage.claims import NOW, claim, probe
from storage.models import OutboxMessage
from storage.repos._lists import in_list
from storage.repos._upsert import per_dialect
from storage.types import UTCDateTime

# Published when replies are queued: the channel senders (Feishu, console) wake on it.
OUTBOX_TOPIC = "outbox"

PENDING, SENT, FAILED, UNCERTAIN = "pending", "sent", "failed", "uncertain"


_ENQUEUED_FIELDS = (
    "idempotency_key",
    "platform",
    "chat_id",
    "content_type",
    "content",
    "conversation_id",
    "reply_to",
    "in_thread",
)


_DUE_NOW = bindparam("due", type_=UTCDateTime())


def _enqueue(insert: Any) -> Any:
    table = OutboxMessage.__table__
    fields = {name: bindparam(name, type_=table.c[name].type) for name in _ENQUEUED_FIELDS}
    return (
        insert(table)
        # Due from `now`, bound again under a name of its own: a parameter twice in VALUES
        # is sent once per row by SQLAlchemy's multi-row insert on asyncpg, and the server
        # then asks for one more (the same below in `sessions`).
        .values(**fields, state=PENDING, attempts=0, created_at=NOW, next_attempt_at=_DUE_NOW)
        .on_conflict_do_nothing(index_elements=["idempotency_key"])
        .returning(table.c.id)
    )


# Built once, bound per call: the Bot's replies, a group's at once.
_ENQUEUE_ALL = per_dialect(
    lambda insert: _enqueue(insert).returning(OutboxMessage.__table__.c.idempotency_key)
)


async def enqueue(
    tx: AsyncSession,
    *,
    idempotency_key: str,
    platform: str,
    chat_id: str,
    content_type: str,
    content: dict[str, Any],
    conversation_id: int | None = None,
    reply_to: str | None = None,
    in_thread: bool = False,
    now: datetime,
) -> int | None:
    """The new row's id; None if this key was enqueued before (the same reply, retried)."""
    row = {
        "idempotency_key": idempotency_key,
        "platform": platform,
        "chat_id": chat_id,
        "content_type": content_type,
        "content": content,
        "conversation_id": conversation_id,
        "reply_to": reply_to,
        "in_thread": in_thread,
    }
    return (await enqueue_all(tx, [row], now)).get(idempotency_key)


async def enqueue_all(
    tx: AsyncSession, rows: list[dict[str, Any]], now: datetime
) -> dict[str, int]:
    """`enqueue` of several rows (its keyword arguments but `now`, as dicts) in one statement:
    idempotency key -> id, for the keys not enqueued before."""
    if not rows:
        return {}
    result = await tx.execute(_ENQUEUE_ALL(tx), [{**row, "now": now, "due": now} for row in rows])
    return {str(key): int(row_id) for row_id, key in result}


_EARLIER = aliased(OutboxMessage, name="earlier")


# The rows a sender may take (platform and time bound per call). A chat's replies go out one
# at a time, in the order they were written: a row waits while an earlier one of its chat is
# pending (in flight, or waiting for a retry). Senders deliver many rows at once, so without
# this two replies of one turn could reach the chat the other way round.
_DUE = [
    # Not "platform": a claim is an UPDATE, where a column's own name binds its new value.
    OutboxMessage.platform == bindparam("of_platform", type_=String()),
    OutboxMessage.state == PENDING,
    OutboxMessage.next_attempt_at <= NOW,
    ~exists().where(
        _EARLIER.platform == OutboxMessage.platform,
        _EARLIER.chat_id == OutboxMessage.chat_id,
        _EARLIER.state == PENDING,
        _EARLIER.id < OutboxMessage.id,
    ),
]


_HAS_DUE = probe(OutboxMessage, _DUE)


async def has_due(tx: AsyncSession, *, platform: str, now: datetime) -> bool:
    return await _HAS_DUE.finds(tx, now=now, of_platform=platform)


_CLAIM_DUE = claim(
    OutboxMessage,
    _DUE,
    [OutboxMessage.next_attempt_at, OutboxMessage.id],
    also={"attempts": OutboxMessage.attempts + 1},
)


async def claim_due(
    tx: AsyncSession,
    *,
    platform: str,
    owner: str,
    now: datetime,
    limit: int,
    lease: timedelta,
) -> list[OutboxMessage]:
    """Claim rows to deliver. `attempts` counts deliveries begun, so a delivery that crashed
    midway is visible to the next claimer (it may have reached the platform)."""
    return await _CLAIM_DUE.take(
        tx, limit=limit, owner=owner, lease=lease, now=now, of_platform=platform
    )


async def finish(
    tx: AsyncSession,
    row_id: int,
    owner: str,
    *,
    state: str,
    now: datetime,
    error: str | None = None,
    platform_message_ids: list[str] | None = None,
) -> bool:
    """Settle a claimed row; False if the claim was lost meanwhile."""
    settling = Settling(row_id, owner, state, error, platform_message_ids)
    [held] = await finish_each(tx, [settling], now)
    return held


def _finish(*, sent: bool) -> Any:
    table = cast(Table, OutboxMessage.__table__)
    values: dict[str, Any] = {
        "state": bindparam("state", type_=String()),
        "lease_owner": None,
        "lease_expires_at": None,
        "last_error": bindparam("last_error", type_=Text()),
    }
    if sent:
        values["sent_at"] = bindparam("sent_at", type_=table.c.sent_at.type)
        ids_type = table.c.platform_message_ids.type
        values["platform_message_ids"] = bindparam("platform_message_ids", type_=ids_type)
    return (
        update(table)
        .where(table.c.id == bindparam("row_id"), table.c.lease_owner == bindparam("owner"))
        .values(**values)
    )


_FINISH, _FINISH_SENT = _finish(sent=False), _finish(sent=True)
_CLAIMED_BY = (
    select(OutboxMessage.__table__.c.id, OutboxMessage.__table__.c.lease_owner)
    .where(in_list(OutboxMessage.__table__.c.id, "ids"))
    .with_for_update()  # PostgreSQL: no takeover between this and the settling
)


@dataclass(frozen=True)
class Settling:
    """One claimed row's outcome, as `finish` takes it."""

    row_id: int
    owner: str  # who claimed it
    state: str
    error: str | None = None
    platform_message_ids: list[str] | None = None


async def finish_each(tx: AsyncSession, settlings: Sequence[Settling], now: datetime) -> list[bool]:
    """`finish` of several claimed rows, in a statement or two for all of them (the senders'
    deliveries of a moment end together): for each, False if its claim was lost."""
    if not settlings:
        return []
    ids = [s.row_id for s in settlings]
    claimed_by = dict((await tx.execute(_CLAIMED_BY, {"ids": ids})).all())
    held = [claimed_by.get(s.row_id) == s.owner for s in settlings]
    sent: list[dict[str, Any]] = []
    other: list[dict[str, Any]] = []
    for settling in (s for s, ok in zip(settlings, held, strict=True) if ok):
        bound: dict[str, Any] = {
            "row_id": settling.row_id,
            "owner": settling.owner,
            "state": settling.state,
            "last_error": settling.error[:2000] if settling.error else None,
        }
        if settling.state == SENT:
            ids_sent = settling.platform_message_ids
            sent.append(bound | {"sent_at": now, "platform_message_ids": ids_sent})
        else:
            other.append(bound)
    if sent:
        await tx.execute(_FINISH_SENT, sent)
    if other:
        await tx.execute(_FINISH, other)
    return held


async def retry_later(
    tx: AsyncSession, row_id: int, owner: str, *, at: datetime, error: str
) -> None:
    await tx.execute(
        update(OutboxMessage)
        .where(OutboxMessage.id == row_id, OutboxMessage.lease_owner == owner)
        .values(
            next_attempt_at=at,
            last_error=error[:2000],
            lease_owner=None,
            lease_expires_at=None,
        )
    )


async def sent_ids(tx: AsyncSession, idempotency_key: str) -> list[str] | None:
    """The platform ids a sent row's delivery stored; None if the row is not sent (or none
    has that key)."""
    row = (
        await tx.execute(
            select(OutboxMessage.state, OutboxMessage.platform_message_ids).where(
                OutboxMessage.idempotency_key == idempotency_key
            )
        )
    ).first()
    if row is None or row.state != SENT:
        return None
    return [str(i) for i in row.platform_message_ids or []]


async def get(tx: AsyncSession, row_id: int) -> OutboxMessage | None:
    return await tx.get(OutboxMessage, row_id)


async def by_conversation(
    tx: AsyncSession, conversation_id: int, after_id: int = 0, limit: int = 100
) -> list[OutboxMessage]:
    stmt = (
        select(OutboxMessage)
        .where(OutboxMessage.conversation_id == conversation_id, OutboxMessage.id > after_id)
        .order_by(OutboxMessage.id)
        .limit(limit)
    )
    return list((await tx.scalars(stmt)).all())


async def card_on_message(
    tx: AsyncSession, platform: str, chat_id: str, message_id: str, *, scan: int = 200
) -> dict[str, Any] | None:
    """The card a platform message shows now: its latest `card_update`, else the `card` that
    sent it; None when neither is among the chat's last `scan` card rows (a card that old is
    left as it is). Walks the chat's rows newest first (ix_outbox_chat_state's prefix)."""
    stmt = (
        select(
            OutboxMessage.content_type, OutboxMessage.content, OutboxMessage.platform_message_ids
        )
        .where(
            OutboxMessage.platform == platform,
            OutboxMessage.chat_id == chat_id,
            OutboxMessage.content_type.in_(("card", "card_update")),
        )
        .order_by(OutboxMessage.id.desc())
        .limit(scan)
    )
    for content_type, content, sent_as in (await tx.execute(stmt)).all():
        if content_type == "card_update" and content.get("message_id") == message_id:
            card = content.get("card")
            return card if isinstance(card, dict) else None
        if content_type == "card" and message_id in (sent_as or []):
            return dict(content)
    return None


UNFINISHED = (PENDING, UNCERTAIN, FAILED)


async def count_unfinished(tx: AsyncSession, conversation_id: int | None = None) -> dict[str, int]:
    """Rows per state that is not `sent`: all of them, or one conversation's. Sent rows are
    every reply ever written, so they are not counted: by the state index this reads only the
    rows still owed (a count of every state scanned the whole outbox, on SQLite with the
    event loop held)."""
    stmt = (
        select(OutboxMessage.state, func.count(OutboxMessage.id))
        .where(OutboxMessage.state.in_(UNFINISHED))
        .group_by(OutboxMessage.state)
    )
    if conversation_id is not None:
        stmt = stmt.where(OutboxMessage.conversation_id == conversation_id)
    rows = await tx.execute(stmt)
    return {state: int(n) for state, n in rows.all()}
