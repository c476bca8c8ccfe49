"""Feishu `im.message.reaction.created_v1` → InboundReaction.

The event (schema 2.0) carries `header.event_id`, and in `event`: `message_id` (the message
reacted to), `reaction_type.emoji_type`, `operator_type` (`user` or `app`), `user_id`
(`open_id`, `union_id`, `user_id`) and `action_time` (milliseconds, a string of digits).
It names no chat. What identifies the reaction (the event id, the message) must be there
and well-formed, or it is NotAReaction; the rest is read defensively."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bot.channels.feishu.normalize import MAX_ID_LENGTH, PLATFORM
from bot.channels.reactions import InboundReaction

REACTION_EVENT = "im.message.reaction.created_v1"
MAX_EMOJI_LENGTH = 64


class NotAReaction(ValueError):
    """The event lacks its id or the message reacted to, or has them garbled."""


def normalize_reaction(body: dict[str, Any], *, received: datetime) -> InboundReaction:
    header, event = _dict(body.get("header")), _dict(body.get("event"))
    event_id = _id(header.get("event_id"), "header.event_id")
    message_id = _id(event.get("message_id"), "message_id")
    operator = _dict(event.get("user_id")).get("open_id")
    user = event.get("operator_type", "user") == "user" and _is_id(operator)
    emoji = _dict(event.get("reaction_type")).get("emoji_type")
    return InboundReaction(
        platform=PLATFORM,
        event_id=event_id,
        message_id=message_id,
        operator_id=str(operator) if user else None,
        emoji=emoji[:MAX_EMOJI_LENGTH] if isinstance(emoji, str) and emoji.isprintable() else "?",
        created_at=_ms(event.get("action_time")) or received,
    )


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _is_id(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_ID_LENGTH and value.isprintable()


def _id(value: Any, what: str) -> str:
    if not _is_id(value):
        raise NotAReaction(f"{REACTION_EVENT} without a usable {what}")
    return str(value)


def _ms(value: Any) -> datetime | None:
    if isinstance(value, str) and value.isascii() and value.isdecimal() and len(value) <= 15:
        return datetime.fromtimestamp(int(value) / 1000, UTC)
    return None
