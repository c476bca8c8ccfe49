"""The outbox: what the assistant decided to say, delivered by a sender worker.

The idempotency key becomes Feishu's `uuid`, so a resend after a crash is not a second
message. States: pending → (claimed) → sent | failed | uncertain. A chat's rows are claimed
in the order they were written, one at a time (`_due`).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, String, bindparam, exists, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from storage.claims import NOW, claim, probe
from storage.models import OutboxMessage
from storage.repos._upsert import insert_for

# Published when replies are queued: the channel senders (Feishu, console) wake on it.
OUTBOX_TOPIC = "outbox"

PENDING, SENT, FAILED, UNCERTAIN = "pending", "sent", "failed", "uncertain"


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
    stmt = (
        insert_for(tx, OutboxMessage)
        .values(
            idempotency_key=idempotency_key,
            platform=platform,
            chat_id=chat_id,
            content_type=content_type,
            content=content,
            conversation_id=conversation_id,
            reply_to=reply_to,
            in_thread=in_thread,
            state=PENDING,
            attempts=0,
            created_at=now,
            next_attempt_at=now,
        )
        .on_conflict_do_nothing(index_elements=["idempotency_key"])
        .returning(OutboxMessage.id)
    )
    return (await tx.execute(stmt)).scalar_one_or_none()


_EARLIER = aliased(OutboxMessage, name="earlier")


def _due(
    platform: str | ColumnElement[str], now: datetime | ColumnElement[datetime]
) -> list[Any]:
    return [
        OutboxMessage.platform == platform,
        OutboxMessage.state == PENDING,
        OutboxMessage.next_attempt_at <= now,
        # A chat's replies go out one at a time, in the order they were written: a row waits
        # while an earlier one of its chat is pending (in flight, or waiting for a retry).
        # Senders deliver many rows at once, so without this two replies of one turn could
        # reach the chat the other way round.
        ~exists().where(
            _EARLIER.platform == OutboxMessage.platform,
            _EARLIER.chat_id == OutboxMessage.chat_id,
            _EARLIER.state == PENDING,
            _EARLIER.id < OutboxMessage.id,
        ),
    ]


_HAS_DUE = probe(OutboxMessage, _due(bindparam("platform", type_=String()), NOW))


async def has_due(tx: AsyncSession, *, platform: str, now: datetime) -> bool:
    return await _HAS_DUE.finds(tx, now=now, platform=platform)


_CLAIM_DUE = claim(
    OutboxMessage,
    _due(bindparam("platform", type_=String()), NOW),
    [OutboxMessage.next_attempt_at, OutboxMessage.id],
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
    rows = await _CLAIM_DUE.take(
        tx, limit=limit, owner=owner, lease=lease, now=now, platform=platform
    )
    for row in rows:
        row.attempts += 1
    return rows


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
    values: dict[str, Any] = {
        "state": state,
        "lease_owner": None,
        "lease_expires_at": None,
        "last_error": error[:2000] if error else None,
    }
    if state == SENT:
        values["sent_at"] = now
        values["platform_message_ids"] = platform_message_ids
    result = await tx.execute(
        update(OutboxMessage)
        .where(OutboxMessage.id == row_id, OutboxMessage.lease_owner == owner)
        .values(**values)
    )
    return bool(getattr(result, "rowcount", 0))


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


async def count_by_state(
    tx: AsyncSession, conversation_id: int | None = None
) -> dict[str, int]:
    """Rows per state: all of them, or one conversation's."""
    stmt = select(OutboxMessage.state, func.count(OutboxMessage.id)).group_by(OutboxMessage.state)
    if conversation_id is not None:
        stmt = stmt.where(OutboxMessage.conversation_id == conversation_id)
    rows = await tx.execute(stmt)
    return {state: int(n) for state, n in rows.all()}
