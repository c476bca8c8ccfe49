"""Ingest: the one door every channel's messages come through.

Store first, decide second, in one transaction: the inbound row is unique per
(platform, message_id), so a redelivered or concurrently delivered message loses the race in
the database and produces nothing. The caller acks only after `accept` returns, so an ack
means the message is durable.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from prometheus_client import Counter

from bot.channels.messages import InboundMessage
from bot.host.notify import Notifier
from storage.db import Database
from storage.repos import conversations, inbound, inbox
from storage.types import utcnow

log = logging.getLogger(__name__)

INBOX_TOPIC = "inbox"
INGESTED = Counter("maka_ingested_messages_total", "Inbound messages by outcome", ["outcome"])


class Outcome(StrEnum):
    ANSWERED = "answered"  # new, and handed to the Bot
    HISTORY = "history"  # new, stored, not addressed to the bot
    STALE = "stale"  # new, stored, too old to answer
    DUPLICATE = "duplicate"  # seen before: nothing happens


@dataclass(frozen=True)
class IngestResult:
    outcome: Outcome
    conversation_id: int | None = None
    inbox_item_id: int | None = None


class Ingest:
    def __init__(self, db: Database, notifier: Notifier, *, max_event_age: timedelta) -> None:
        self.db = db
        self.notifier = notifier
        self.max_event_age = max_event_age

    async def accept(self, msg: InboundMessage, *, now: datetime | None = None) -> IngestResult:
        now = now or utcnow()
        result = await self._store(msg, now)
        INGESTED.labels(result.outcome.value).inc()
        if result.outcome is Outcome.ANSWERED:
            await self.notifier.notify(INBOX_TOPIC)
        elif result.outcome is Outcome.STALE:
            log.info(
                "stored stale message %s from %s (not answered)",
                msg.message_id,
                msg.created_at.isoformat(),
            )
        return result

    async def _store(self, msg: InboundMessage, now: datetime) -> IngestResult:
        async with self.db.write() as session:
            conversation = await conversations.get_or_create(
                session,
                platform=msg.platform,
                chat_id=msg.chat_id,
                chat_type=msg.chat_type,
                peer_open_id=msg.sender_id if msg.chat_type == "p2p" else None,
            )
            outcome = self._decide(msg, now, listen_all=conversation.listen_all)
            event_id = await inbound.insert_if_new(
                session,
                platform=msg.platform,
                message_id=msg.message_id,
                event_type="message",
                chat_id=msg.chat_id,
                payload=msg.raw or msg.to_payload(),
                status=outcome.value,
                received_at=now,
            )
            if event_id is None:
                return IngestResult(Outcome.DUPLICATE, conversation.id)
            item_id = None
            if outcome is Outcome.ANSWERED:
                item_id = await inbox.append(
                    session,
                    kind="user_message",
                    payload=msg.to_payload(),
                    conversation_id=conversation.id,
                    dedupe_key=f"{msg.platform}:{msg.message_id}",
                    created_at=now,
                )
            return IngestResult(outcome, conversation.id, item_id)

    def _decide(self, msg: InboundMessage, now: datetime, *, listen_all: bool) -> Outcome:
        if now - msg.created_at > self.max_event_age:
            return Outcome.STALE
        if msg.sender_type != "user":  # bots, including this one, are never answered
            return Outcome.HISTORY
        addressed = msg.chat_type == "p2p" or msg.mentioned_bot or listen_all
        return Outcome.ANSWERED if addressed else Outcome.HISTORY
