"""Recalls: a message its sender took back leaves everything that kept it.

One transaction, stored once (the recall is an inbound event `recall:<message_id>`, so a
redelivery is a duplicate and does nothing):
- its source records (the message's, its attachments' `#att:…`, its forward's `#forward`)
  become tombstones: the search follower deletes their documents, memory indexes forget them
  (an entry citing only them is deleted), and a later sync or late delivery cannot bring the
  message back (storage/repos/source_records.py `remove_message`);
- its attachments are `recalled`: no worker reads their files any more;
- its inbox item, if still waiting, is delivered as "recalled" (no turn answers it; a turn
  already running with it goes on), and a message not here yet is blocked, so arriving after
  its recall it is stored but never answered;
- the turn logs that showed it to the model are redacted, with the turn's answer (its log
  and its replies in the outbox) and the summaries made since, and their search documents
  with them (storage/repos/redactions.py `redact_item`, the rule a forget follows too);
- the message as it was received (its stored inbound event, its inbox item's payload) keeps
  who, where and when, and loses its words; so does one arriving after its recall, when it
  was addressed to the bot (ingest sees the recall's item block it; an unaddressed one keeps
  its event until retention prunes it: spotting it would cost every batch a read).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from prometheus_client import Counter
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from sources.feishu import records as feishu_source
from storage.models import InboundEvent
from storage.repos import (
    attachments,
    conversations,
    inbound,
    inbox,
    memory_indexes,
    redactions,
    source_records,
    taken_back,
)

log = logging.getLogger(__name__)
RECALLS = Counter("maka_recalls_total", "Recalled messages, by outcome", ["outcome"])
RECALL_KIND = "recall"


@dataclass(frozen=True)
class InboundRecall:
    platform: str
    message_id: str  # the message recalled
    chat_id: str
    recalled_at: datetime
    recall_type: str  # e.g. message_owner, group_owner, group_manager, enterprise_manager
    raw: dict[str, object]

    @property
    def event_key(self) -> str:
        """Its inbound row's key: one recall per message, whoever sends it again."""
        return f"{RECALL_KIND}:{self.message_id}"[:128]


@dataclass(frozen=True)
class RecallResult:
    new: bool  # False: a redelivery, nothing done
    records_removed: int = 0
    turn_dropped: bool = False  # its inbox item was waiting, and no turn will answer it
    logs_redacted: int = 0


async def recall_in(tx: AsyncSession, recall: InboundRecall, now: datetime) -> RecallResult:
    """The recall, in the caller's transaction (see the module docstring)."""
    new = await inbound.insert_many_if_new(
        tx,
        [
            inbound.NewEvent(
                platform=recall.platform,
                message_id=recall.event_key,
                event_type=RECALL_KIND,
                chat_id=recall.chat_id,
                payload=dict(recall.raw),
                status="recalled",
                received_at=now,
            )
        ],
    )
    if not new:
        return RecallResult(False)
    source = feishu_source.source_name(recall.chat_id)
    removed = await source_records.remove_message(
        tx, source, recall.message_id, scope=await _scope(tx, recall), now=now
    )
    # Their records are the message's source's `#att:` ones, removed above.
    await attachments.recall(tx, recall.platform, recall.message_id, now)
    await memory_indexes.forget_records(tx, removed, now)
    dedupe_key = inbox.message_key(recall.platform, recall.message_id)
    item = await taken_back.recall_message(tx, dedupe_key, now)
    redacted = await redactions.redact_message_item(tx, item, now)  # reads the item's words
    await taken_back.blank_events(tx, recall.platform, [recall.message_id])
    if item.item_id is not None:
        await taken_back.blank_items(tx, [dedupe_key])
    return RecallResult(True, len(removed), item.dropped, redacted.logs)


async def recalled_among(tx: AsyncSession, platform: str, message_ids: list[str]) -> set[str]:
    """Of these messages, those whose recall is stored (it may come before the message): for
    a writer that must not start work on one (ingest's attachment rows)."""
    keys = {f"{RECALL_KIND}:{m}"[:128]: m for m in message_ids}
    if not keys:
        return set()
    found = await tx.scalars(
        select(InboundEvent.message_id).where(
            InboundEvent.platform == platform, InboundEvent.message_id.in_(list(keys))
        )
    )
    return {keys[k] for k in found.all()}


async def _scope(tx: AsyncSession, recall: InboundRecall) -> str:
    """The scope a tombstone of a message never stored gets: its chat's, when known (a
    tombstone shows nothing, so any scope would do; this one keeps the chat's rows alike)."""
    conv = await conversations.by_chat(tx, recall.platform, recall.chat_id)
    if conv is None:
        return feishu_source.chat_scope("group", recall.chat_id, None)
    return feishu_source.chat_scope(conv.chat_type, recall.chat_id, conv.peer_open_id)
