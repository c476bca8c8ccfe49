"""Ingest: the one door every channel's messages come through.

Store first, decide second, in one transaction: the inbound row is unique per
(platform, message_id), so a redelivered or concurrently delivered message loses the race in
the database and produces nothing. The caller acks only after `accept` returns, so an ack
means the message is durable.

Group commit: messages that arrive while a transaction is being written wait for the next
one and are written together, with one multi-row insert per table. An idle system writes
each message at once (a batch of one); a busy one pays one commit per batch instead of one
per message. If a batch fails, its messages are written one by one, so one bad message
cannot hold the others back.

Each new Feishu message is also stored as its source record (`source_records`, one more
multi-row insert in the same transaction, `ON CONFLICT DO NOTHING`): history sync writes the
same rows, so a message seen both ways is one record, whichever came first. (Records are
indexed for search by the workers, off this path: `bot/memory/source_index.py`.)
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from prometheus_client import Counter, Histogram
from sqlalchemy.ext.asyncio import AsyncSession

from bot.channels.clicks import CLICK_KIND, InboundClick
from bot.channels.messages import InboundMessage
from bot.channels.recalls import (
    RECALLS,
    InboundRecall,
    RecallResult,
    recall_in,
    recalled_among,
)
from bot.host.notify import Notifier
from sources.feishu import records as feishu_source
from storage.db import Database
from storage.group_commit import GroupCommit
from storage.repos import attachments, conversations, inbound, inbox, source_records, taken_back
from storage.repos.sessions import SESSION_INDEX_TOPIC
from storage.repos.source_records import NewRecord
from storage.types import utcnow

log = logging.getLogger(__name__)

INBOX_TOPIC = "inbox"
MAX_BATCH = 256
INGESTED = Counter("maka_ingested_messages_total", "Inbound messages by outcome", ["outcome"])
CLICKS = Counter("maka_ingested_clicks_total", "Inbound button clicks by outcome", ["outcome"])
BATCH_SIZE = Histogram(
    "maka_ingest_batch_size",
    "Messages per ingest transaction",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256),
)


class Outcome(StrEnum):
    ANSWERED = "answered"  # new, and handed to the Bot
    HISTORY = "history"  # new, stored, not addressed to the bot
    STALE = "stale"  # new, stored, too old to answer
    DUPLICATE = "duplicate"  # seen before: nothing happens
    RECALLED = "recalled"  # new, stored, but recalled before it came: not answered


@dataclass(frozen=True)
class IngestResult:
    outcome: Outcome
    conversation_id: int | None = None


@dataclass(frozen=True)
class _KnownConversation:
    id: int
    listen_all: bool
    seen_at: float
    peer_open_id: str | None = None


@dataclass(frozen=True)
class _Pending:
    msg: InboundMessage
    now: datetime


class Ingest:
    # A conversation's id never changes and its listen-all flag rarely does: remembering both
    # for a short while leaves two statements per batch (the events and their inbox items).
    # A change of listen-all therefore takes up to this long to reach every replica.
    CONVERSATION_TTL = 30.0

    def __init__(self, db: Database, notifier: Notifier, *, max_event_age: timedelta) -> None:
        self.db = db
        self.notifier = notifier
        self.max_event_age = max_event_age
        self._conversations: dict[tuple[str, str], _KnownConversation] = {}
        self._batches = GroupCommit(
            self._store, what="ingest", max_group=MAX_BATCH, on_group=BATCH_SIZE.observe
        )

    async def accept(self, msg: InboundMessage, *, now: datetime | None = None) -> IngestResult:
        """Returns once the message is committed (or raises if it could not be)."""
        result = await self._batches.run(_Pending(msg, now or utcnow()))
        INGESTED.labels(result.outcome.value).inc()
        if result.outcome is Outcome.STALE:
            log.info(
                "stored stale message %s from %s (not answered)",
                msg.message_id,
                msg.created_at.isoformat(),
            )
        return result

    async def accept_click(
        self, click: InboundClick, *, now: datetime | None = None
    ) -> IngestResult:
        """A button's click, stored once (inbound_events, `click-<click_id>`) and handed to the
        Bot as a `click` inbox item, in one transaction; a redelivery is a DUPLICATE and does
        nothing. Returns once committed (the channel acks then). Not group-committed: clicks
        are few, and each is a person waiting on a card."""
        now = now or utcnow()
        stale = now - click.created_at > self.max_event_age
        outcome = Outcome.STALE if stale else Outcome.ANSWERED
        peer = click.operator_id if click.chat_type == "p2p" else None
        wanted = conversations.NewConversation(click.platform, click.chat_id, click.chat_type, peer)
        async with self.db.ack_write() as tx:
            found = await conversations.get_or_create_many(tx, [wanted])
            conversation_id = found[(click.platform, click.chat_id)].id
            new = await inbound.insert_many_if_new(
                tx,
                [
                    inbound.NewEvent(
                        platform=click.platform,
                        message_id=click.event_key,
                        event_type=CLICK_KIND,
                        chat_id=click.chat_id,
                        payload=click.to_payload(),
                        status=outcome.value,
                        received_at=now,
                    )
                ],
            )
            if not new:
                outcome = Outcome.DUPLICATE
            elif outcome is Outcome.ANSWERED:
                await inbox.append_many(
                    tx,
                    [
                        inbox.NewItem(
                            kind=CLICK_KIND,
                            # `sender_id`: who acts, read as for a message (roles, admins)
                            payload=click.to_payload() | {"sender_id": click.operator_id},
                            conversation_id=conversation_id,
                            dedupe_key=f"{click.platform}:{click.event_key}",
                            created_at=now,
                        )
                    ],
                )
        if outcome is Outcome.ANSWERED:
            self.notifier.wake_local(INBOX_TOPIC)
        CLICKS.labels(outcome.value).inc()
        log.info("click %s by %s: %s", click.click_id, click.operator_id, outcome.value)
        return IngestResult(outcome, conversation_id)

    async def recall(self, recall: InboundRecall, *, now: datetime | None = None) -> RecallResult:
        """A message recalled by its sender (bot/channels/recalls.py), stored once; returns
        once committed (the channel acks then). Not group-committed: recalls are rare."""
        now = now or utcnow()
        async with self.db.ack_write() as tx:
            result = await recall_in(tx, recall, now)
        if result.new:  # other replicas heard of the tombstones and redactions at commit
            self.notifier.wake_local(source_records.RECORDS_TOPIC)
            self.notifier.wake_local(SESSION_INDEX_TOPIC)
        RECALLS.labels("new" if result.new else "duplicate").inc()
        log.info(
            "recall of %s in %s: %s", recall.message_id, recall.chat_id,
            "duplicate" if not result.new else
            f"{result.records_removed} records removed, turn dropped: {result.turn_dropped}, "
            f"{result.logs_redacted} logs redacted",
        )  # fmt: skip
        return result

    async def chat_type_of(self, platform: str, chat_id: str) -> str | None:
        """A known chat's type (p2p | group), for a platform whose callbacks do not say it
        (a Feishu card click); None for a chat no message came from and no card went to."""
        async with self.db.read() as tx:
            row = await conversations.by_chat(tx, platform, chat_id)
        return row.chat_type if row is not None else None

    async def close(self) -> None:
        await self._batches.close()

    async def _store(self, batch: list[_Pending]) -> list[IngestResult]:
        async with self.db.ack_write() as tx:
            known = await self._conversations_of(tx, [p.msg for p in batch])
            results = await self._store_in(tx, batch, known)
        # Remembered only once committed: a rolled-back conversation row must not be reused.
        self._conversations.update(known)
        # Other replicas heard of these at commit.
        if any(r.outcome is Outcome.ANSWERED for r in results):
            self.notifier.wake_local(INBOX_TOPIC)
        if any(r.outcome is not Outcome.DUPLICATE for r in results):
            self.notifier.wake_local(source_records.RECORDS_TOPIC)
            if any(p.msg.attachments for p in batch):
                self.notifier.wake_local(attachments.ATTACHMENTS_TOPIC)
        return results

    async def _store_in(
        self,
        tx: AsyncSession,
        batch: list[_Pending],
        known: dict[tuple[str, str], _KnownConversation],
    ) -> list[IngestResult]:
        outcomes = [
            self._decide(p.msg, p.now, listen_all=known[(p.msg.platform, p.msg.chat_id)].listen_all)
            for p in batch
        ]
        new_ids = await inbound.insert_many_if_new(
            tx,
            [
                inbound.NewEvent(
                    platform=p.msg.platform,
                    message_id=p.msg.message_id,
                    event_type="message",
                    chat_id=p.msg.chat_id,
                    payload=p.msg.raw or p.msg.to_payload(),
                    status=o.value,
                    received_at=p.now,
                )
                for p, o in zip(batch, outcomes, strict=True)
            ],
        )
        results: list[IngestResult] = []
        to_inbox: list[inbox.NewItem] = []
        new_records: list[NewRecord] = []
        new_attachments: list[attachments.NewAttachment] = []
        claimed: set[tuple[str, str]] = set()
        for pending, outcome in zip(batch, outcomes, strict=True):
            msg = pending.msg
            conversation_id = known[(msg.platform, msg.chat_id)].id
            key = (msg.platform, msg.message_id)
            if key not in new_ids or key in claimed:  # stored before, or twice in this batch
                results.append(IngestResult(Outcome.DUPLICATE, conversation_id))
                continue
            claimed.add(key)
            results.append(IngestResult(outcome, conversation_id))
            if msg.platform == feishu_source.PLATFORM:
                record = _source_record(msg, known[(msg.platform, msg.chat_id)].peer_open_id)
                new_records.append(record)
                # Addressed or not: a group's files are searchable as its words are.
                new_attachments.extend(_attachments(msg, record))
            if outcome is Outcome.ANSWERED:
                to_inbox.append(
                    inbox.NewItem(
                        kind="user_message",
                        payload=msg.to_payload(),
                        conversation_id=conversation_id,
                        dedupe_key=inbox.message_key(msg.platform, msg.message_id),
                        created_at=pending.now,
                    )
                )
        # Other replicas hear of both at commit (the tables' triggers: bot/host/notify.py).
        if new_records:
            await source_records.add_records(tx, new_records, batch[0].now)
        if new_attachments:  # only a batch with files pays for the insert (and this read)
            # A message recalled before it came: its files are never fetched nor read.
            gone = await recalled_among(
                tx, feishu_source.PLATFORM, sorted({a.message_id for a in new_attachments})
            )
            new_attachments = [a for a in new_attachments if a.message_id not in gone]
            await attachments.add_many(tx, new_attachments, batch[0].now)
            await self.notifier.publish(tx, attachments.ATTACHMENTS_TOPIC)
        if to_inbox:
            added = await inbox.append_many(tx, to_inbox)
            if len(added) < len(to_inbox):  # a recall came first: its item blocks the key
                for n, result in enumerate(results):
                    msg = batch[n].msg
                    dedupe = inbox.message_key(msg.platform, msg.message_id)
                    if result.outcome is Outcome.ANSWERED and dedupe not in added:
                        results[n] = IngestResult(Outcome.RECALLED, result.conversation_id)
                        await taken_back.blank_events(tx, msg.platform, [msg.message_id])
        return results

    async def _conversations_of(
        self, tx: AsyncSession, msgs: list[InboundMessage]
    ) -> dict[tuple[str, str], _KnownConversation]:
        """The conversation of every message's chat: remembered, or read and created in one
        go for all the chats not remembered (a burst of new people is one insert)."""
        now = time.monotonic()
        known: dict[tuple[str, str], _KnownConversation] = {}
        wanted: list[conversations.NewConversation] = []
        for msg in msgs:
            key = (msg.platform, msg.chat_id)
            remembered = self._conversations.get(key)
            if remembered is not None and now - remembered.seen_at < self.CONVERSATION_TTL:
                known[key] = remembered
            else:
                peer = msg.sender_id if msg.chat_type == "p2p" else None
                wanted.append(
                    conversations.NewConversation(msg.platform, msg.chat_id, msg.chat_type, peer)
                )
        for key, row in (await conversations.get_or_create_many(tx, wanted)).items():
            known[key] = _KnownConversation(row.id, row.listen_all, now, row.peer_open_id)
        return known

    def _decide(self, msg: InboundMessage, now: datetime, *, listen_all: bool) -> Outcome:
        if now - msg.created_at > self.max_event_age:
            return Outcome.STALE
        if msg.sender_type != "user":  # bots, including this one, are never answered
            return Outcome.HISTORY
        addressed = msg.chat_type == "p2p" or msg.mentioned_bot or listen_all
        return Outcome.ANSWERED if addressed else Outcome.HISTORY


def _source_record(msg: InboundMessage, peer_open_id: str | None) -> NewRecord:
    """The message as its Feishu source record (the history sync builds the same row)."""
    peer = msg.sender_id if msg.sender_type == "user" else peer_open_id
    return feishu_source.message_record(
        chat_id=msg.chat_id,
        scope=feishu_source.chat_scope(msg.chat_type, msg.chat_id, peer),
        message_id=msg.message_id,
        text=msg.text,
        sender_id=msg.sender_id,
        sender_type=msg.sender_type,
        message_type=msg.message_type,
        created_at=msg.created_at,
        root_id=msg.root_id,
        parent_id=msg.parent_id,
        thread_id=msg.thread_id,
        mentions=[feishu_source.MentionRef(m.key, m.name, m.open_id) for m in msg.mentions],
        origin="event",
    )


def _attachments(msg: InboundMessage, record: NewRecord) -> list[attachments.NewAttachment]:
    """The message's resources as work items, seen exactly where its record is."""
    return [
        attachments.NewAttachment(
            platform=msg.platform,
            message_id=msg.message_id,
            resource_key=ref.key,
            source=record.source,
            scope=record.scope,
            kind=ref.kind,
            name=ref.name,
            chat_id=msg.chat_id,
            declared_size=ref.size,
            duration_ms=ref.duration_ms,
            author=msg.sender_id,
            sent_at=msg.created_at,
        )
        for ref in msg.attachments
    ]
