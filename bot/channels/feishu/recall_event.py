"""Feishu `im.message.recalled_v1` → InboundRecall.

The event (schema 2.0, open.feishu.cn/document/server-docs/im-v1/message/events/recalled)
carries in `event`: `message_id` (the message recalled), `chat_id`, `recall_time`
(milliseconds, a string of digits) and `recall_type` (`message_owner`, `group_owner`,
`group_manager` or `enterprise_manager`). The message and its chat must be there and
well-formed, or it is NotARecall; the rest is read defensively."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bot.channels.feishu.normalize import MAX_ID_LENGTH, PLATFORM
from bot.channels.feishu.reaction_event import _ms
from bot.channels.recalls import InboundRecall

RECALL_EVENT = "im.message.recalled_v1"
MAX_TYPE_LENGTH = 32


class NotARecall(ValueError):
    """The event lacks the message recalled or its chat, or has them garbled."""


def normalize_recall(body: dict[str, Any], *, received: datetime) -> InboundRecall:
    event = body.get("event")
    event = event if isinstance(event, dict) else {}
    kind = event.get("recall_type")
    return InboundRecall(
        platform=PLATFORM,
        message_id=_id(event.get("message_id"), "message_id"),
        chat_id=_id(event.get("chat_id"), "chat_id"),
        recalled_at=_ms(event.get("recall_time")) or received,
        recall_type=kind[:MAX_TYPE_LENGTH] if isinstance(kind, str) and kind.isprintable() else "",
        raw=event,
    )


def _id(value: Any, what: str) -> str:
    if isinstance(value, str) and 0 < len(value) <= MAX_ID_LENGTH and value.isprintable():
        return value
    raise NotARecall(f"{RECALL_EVENT} without a usable {what}")
