"""A message taken back (recalled by its sender, or forgotten by the owner) as it was
received: its inbox item, if still waiting, is delivered as RECALLED so no turn answers it,
and one not come yet is blocked; its stored inbound event and inbox item keep who, where
and when, and lose its words. What the Bot's turns kept of it is storage/repos/redactions.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import InboundEvent, InboxItem
from storage.repos._upsert import insert_for

_ITEMS = cast(Table, InboxItem.__table__)


RECALLED = "recalled"  # the batch id of a message its sender recalled before a turn took it


@dataclass(frozen=True)
class Recalled:
    """What became of a recalled message's inbox item."""

    item_id: int | None  # None: the message never reached the inbox (not addressed, not yet)
    conversation_id: int | None
    created_at: datetime | None
    dropped: bool  # it was waiting: no turn will take it
    turn_key: str | None  # the turn that handled it, when one had (its log names it)
    words: tuple[str, ...] = ()  # what it said (its text, and as addressed to the bot)


async def recall_message(tx: AsyncSession, dedupe_key: str, now: datetime) -> Recalled:
    """The message was recalled: its waiting item is delivered as RECALLED, so no turn answers
    it (a turn already running with it goes on: its end marks nothing twice, and a failure
    does not retry it). A message not here yet is blocked: an item with its dedupe key,
    already delivered, so the message arriving later is not answered (`append_many`'s
    ON CONFLICT DO NOTHING)."""
    row = await _item_row(tx, dedupe_key)
    if row is None:
        await tx.execute(
            insert_for(tx, _ITEMS).on_conflict_do_nothing(index_elements=["dedupe_key"]),
            [
                {
                    "kind": "user_message",
                    "payload": {"recalled": True},
                    "dedupe_key": dedupe_key,
                    "created_at": now,
                    "delivered_at": now,
                    "batch_id": RECALLED,
                }
            ],
        )
        return Recalled(None, None, None, False, None)
    waiting = row.delivered_at is None
    if waiting:
        await tx.execute(
            update(_ITEMS)
            .where(_ITEMS.c.id == row.id, _ITEMS.c.delivered_at.is_(None))
            .values(delivered_at=now, batch_id=RECALLED, retry_at=None)
        )
    turn_key = None if waiting else row.batch_id
    return Recalled(row.id, row.conversation_id, row.created_at, waiting, turn_key, _words(row))


async def item_of(tx: AsyncSession, dedupe_key: str) -> Recalled | None:
    """A message's item as `recall_message` reads it, changing nothing (a forget redacts the
    turn logs that showed it, as a recall does)."""
    row = await _item_row(tx, dedupe_key)
    if row is None:
        return None
    handled = row.delivered_at is not None and row.batch_id != RECALLED
    turn_key = row.batch_id if handled else None
    return Recalled(row.id, row.conversation_id, row.created_at, False, turn_key, _words(row))


async def _item_row(tx: AsyncSession, dedupe_key: str) -> Any:
    """What a recall or a forget reads of a message's item: None when it never came."""
    stmt = select(
        _ITEMS.c.id,
        _ITEMS.c.conversation_id,
        _ITEMS.c.created_at,
        _ITEMS.c.delivered_at,
        _ITEMS.c.batch_id,
        _ITEMS.c.payload,
    ).where(_ITEMS.c.dedupe_key == dedupe_key)
    return (await tx.execute(stmt)).one_or_none()


def _words(row: Any) -> tuple[str, ...]:
    """The words the item carried into a turn (what its redaction takes out of the logs)."""
    payload = row.payload if isinstance(row.payload, dict) else {}
    return tuple(str(payload.get(k) or "") for k in ("text", "addressed_text"))


async def drop_waiting(tx: AsyncSession, item_id: int, now: datetime) -> bool:
    """A forgotten message still waiting for its turn is delivered as RECALLED, as a recalled
    one is: no turn reads its words back into a log. True when it was waiting."""
    result = await tx.execute(
        update(_ITEMS)
        .where(_ITEMS.c.id == item_id, _ITEMS.c.delivered_at.is_(None))
        .values(delivered_at=now, batch_id=RECALLED, retry_at=None)
    )
    return bool(getattr(result, "rowcount", 0))


# What an inbox item's payload keeps once its words are taken back: who, where and when,
# which `/why`, the status page and the claim read; never what was said.
_KEPT = (
    "platform",
    "message_id",
    "chat_id",
    "chat_type",
    "sender_id",
    "sender_type",
    "message_type",
    "created_at",
    "thread_id",
    "parent_id",
    "root_id",
    "finding",
)


async def blank_items(tx: AsyncSession, dedupe_keys: Sequence[str]) -> int:
    """The inbox items of these keys keep their row and key (a redelivery stays a duplicate)
    but not their words (`forgotten`: no longer held, recalled or forgotten alike)."""
    if not dedupe_keys:
        return 0
    rows = (
        await tx.execute(
            select(InboxItem.id, InboxItem.payload).where(InboxItem.dedupe_key.in_(dedupe_keys))
        )
    ).all()
    count = 0
    for row in rows:
        payload = row.payload if isinstance(row.payload, dict) else {}
        if payload.get("forgotten"):
            continue
        kept = {k: payload[k] for k in _KEPT if k in payload}
        await tx.execute(
            update(InboxItem)
            .where(InboxItem.id == row.id)
            .values(payload={**kept, "forgotten": True})
        )
        count += 1
    return count


async def blank_events(tx: AsyncSession, platform: str, message_ids: Sequence[str]) -> int:
    """The stored inbound events of these messages (the platform's event as received and
    decrypted) keep their row and key, so a redelivery is still a duplicate, and no body."""
    if not message_ids:
        return 0
    result = await tx.execute(
        update(InboundEvent)
        .where(
            InboundEvent.platform == platform,
            InboundEvent.message_id.in_(list(message_ids)),
        )
        .values(payload={"forgotten": True})
    )
    return int(getattr(result, "rowcount", 0) or 0)
