"""The receipt: a reaction on each message a Bot turn gives the model, removed when the turn
ends (issue #39 item 1).

A message the model is to answer can take seconds or minutes; the reaction ("Typing") says
at once that it arrived. It is written to the outbox in the turn's first grouped write and
removed by an `unreaction` in its last, both in the chat's outbox lane, so the removal goes
out after the turn's replies. Slash commands and refusals get none: they are answered at
once. A turn that fails has the reaction removed; an item parked after its last try gets a
failure mark instead. Keys hold the item's failed-try count, so a retried turn's reaction is
a row of its own (and a turn that took another's batch over writes the same keys, once).
`MAKA_FEISHU_RECEIPT=false` turns it all off. Only on Feishu for now (`PLATFORMS`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.config import Settings
from storage.models import Conversation, OutboxMessage
from storage.repos import inbox

if TYPE_CHECKING:  # turn_context uses this module
    from bot.assistant.turn_context import BatchItem, ConversationView

# The platforms whose messages get it. The console shows outbox rows as they are (a reaction
# row as "[reaction]") until it renders them as a badge on the message; it joins then.
PLATFORMS = frozenset({"feishu"})
TYPING = "Typing"  # emoji_type of Feishu's "typing" reaction (message-reaction emoji list)
FAILED_MARK = "CrossMark"  # reads as "could not handle this"


def reaction_key(item_id: int, attempts: int) -> str:
    return f"rx-{item_id}-{attempts}"


def _row(
    platform: str, chat_id: str, conversation_id: int, key: str, kind: str, content: dict[str, Any]
) -> dict[str, Any]:
    """An `outbox.enqueue_all` row."""
    return {
        "idempotency_key": key,
        "platform": platform,
        "chat_id": chat_id,
        "conversation_id": conversation_id,
        "content_type": kind,
        "content": content,
        "reply_to": None,
        "in_thread": False,
    }


def received(settings: Settings, platform: str, items: Iterable[BatchItem]) -> list[BatchItem]:
    """The items that get a receipt: messages (the platform's own, with an id) for the
    model. What reaches the Bot's inbox is addressed to it, so nothing else is asked."""
    if not settings.feishu_receipt or platform not in PLATFORMS:
        return []
    return [item for item in items if item.is_message and item.message_id]


def reactions(conv: ConversationView, items: list[BatchItem]) -> list[dict[str, Any]]:
    return [
        _row(
            conv.platform,
            conv.chat_id,
            conv.id,
            reaction_key(item.id, item.attempts),
            "reaction",
            {"message_id": item.message_id, "emoji": TYPING},
        )
        for item in items
    ]


def unreactions(conv: ConversationView, items: list[BatchItem]) -> list[dict[str, Any]]:
    return [
        _unreaction(
            conv.platform, conv.chat_id, conv.id, item.id, item.attempts, str(item.message_id)
        )
        for item in items
    ]


def _unreaction(
    platform: str, chat_id: str, conversation_id: int, item_id: int, attempts: int, message: str
) -> dict[str, Any]:
    of = reaction_key(item_id, attempts)
    return _row(
        platform,
        chat_id,
        conversation_id,
        f"ux-{item_id}-{attempts}",
        "unreaction",
        {"message_id": message, "emoji": TYPING, "of": of},
    )


async def after_failure(
    tx: AsyncSession, settings: Settings, failed: list[inbox.Failed], *, counted: bool
) -> list[dict[str, Any]]:
    """The rows a failed turn leaves: its reactions removed, and a failure mark on each
    message parked. A failure not counted (the database's) leaves the reaction up: the item
    is tried again under the same try count, and that turn takes it down."""
    if not settings.feishu_receipt or not counted:
        return []
    tried = {reaction_key(item.id, item.attempts - 1): item for item in failed}
    written = set(
        (
            await tx.scalars(
                select(OutboxMessage.idempotency_key).where(
                    OutboxMessage.idempotency_key.in_(list(tried))
                )
            )
        ).all()
    )
    rows: list[dict[str, Any]] = []
    for key, item in tried.items():
        message = item.payload.get("message_id")
        conv = await tx.get(Conversation, item.conversation_id) if message else None
        if conv is None or conv.platform not in PLATFORMS:
            continue
        if key in written:
            rows.append(
                _unreaction(
                    conv.platform, conv.chat_id, conv.id, item.id, item.attempts - 1, str(message)
                )
            )
        if item.parked:
            rows.append(
                _row(
                    conv.platform,
                    conv.chat_id,
                    conv.id,
                    f"rx-parked-{item.id}",
                    "reaction",
                    {"message_id": str(message), "emoji": FAILED_MARK},
                )
            )
    return rows
