"""Reactions: stored, never answered. A reaction someone adds to a message is kept once per
event (redeliveries are duplicates in the database) and starts no turn: what reads it is
discovery, as the owner's feedback on a finding's message (bot/discovery/delivery.py)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from prometheus_client import Counter

from storage.db import Database
from storage.repos import reactions
from storage.types import utcnow

log = logging.getLogger(__name__)
STORED = Counter("maka_reactions_total", "Reactions received, by outcome", ["outcome"])


@dataclass(frozen=True)
class InboundReaction:
    platform: str
    event_id: str  # the platform's id of this event: the same on every redelivery
    message_id: str  # the message reacted to
    operator_id: str | None  # who reacted (a user's open_id; None for an app)
    emoji: str
    created_at: datetime


async def store_reaction(db: Database, reaction: InboundReaction) -> bool:
    """Stored once; False for a redelivery. Returns once committed (the caller acks then)."""
    async with db.ack_write() as tx:
        new = await reactions.add_if_new(
            tx, platform=reaction.platform, event_id=reaction.event_id,
            message_id=reaction.message_id, operator_id=reaction.operator_id,
            emoji=reaction.emoji, created_at=reaction.created_at, received_at=utcnow(),
        )  # fmt: skip
    STORED.labels("stored" if new else "duplicate").inc()
    return new
