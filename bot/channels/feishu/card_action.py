"""`card.action.trigger` (schema 2.0): a click on one of our cards' buttons, read into an
InboundClick.

The documented body (https://open.feishu.cn/document/uAjLw4CM/ukzMukzMukzM/feishu-cards/
card-callback-communication): `header.event_id` (the same on redelivery: the click's id),
`header.token`, `header.create_time` (ms), `event.operator.open_id`, `event.action.value` (the
button's `value`: our action object), `event.action.form_value` (forms: not ours, ignored),
`event.context.open_message_id` and `open_chat_id`. The callback carries no chat type: the
chat's conversation, made when the card was sent there, says it (`chat_type_of`).

Feishu waits 3 s for the answer, whose body may hold a toast
(`{"toast": {"type": "info"|"success"|"error"|"warning", "content": ...}}`); the work itself
is done after, by the Bot, and the card redrawn with a `card_update`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bot.channels.clicks import InboundClick, InvalidClick
from bot.parsing import MAX_ID

CARD_ACTION_EVENT = "card.action.trigger"
PLATFORM = "feishu"
RECEIVED = "Got it"


class NotAClick(InvalidClick):
    """Not a click on one of our buttons (HTTP 400; nothing stored)."""


def click_ids(body: dict[str, Any]) -> tuple[str, str]:
    """(the card's chat id, message id): what must be known before the chat type is looked up."""
    context = _object(_object(body, "event"), "context")
    return _string(context, "open_chat_id"), _string(context, "open_message_id")


def normalize_click(body: dict[str, Any], *, chat_type: str) -> InboundClick:
    header, event = _object(body, "header"), _object(body, "event")
    operator, action = _object(event, "operator"), _object(event, "action")
    chat_id, message_id = click_ids(body)
    created = header.get("create_time")
    try:
        millis = int(created) if isinstance(created, str | int) else -1
    except ValueError:
        millis = -1
    if not 0 <= millis <= MAX_ID:
        raise NotAClick("header.create_time is not a time in milliseconds")
    try:
        return InboundClick(
            platform=PLATFORM,
            click_id=_string(header, "event_id"),
            chat_id=chat_id,
            chat_type=chat_type,
            operator_id=_string(operator, "open_id"),
            card_message_id=message_id,
            action=action.get("value"),  # type: ignore[arg-type]  # checked by InboundClick
            created_at=datetime.fromtimestamp(min(millis / 1000, 253_402_300_799), UTC),
        )
    except InvalidClick as exc:
        raise NotAClick(str(exc)) from None


def toast(content: str, kind: str = "info") -> dict[str, Any]:
    """The callback's answer: a toast the clicker sees at once."""
    return {"toast": {"type": kind, "content": content}}


def _object(parent: dict[str, Any], key: str) -> dict[str, Any]:
    value = parent.get(key)
    if not isinstance(value, dict):
        raise NotAClick(f"{key} is missing or not an object")
    return value


def _string(parent: dict[str, Any], key: str) -> str:
    value = parent.get(key)
    if not isinstance(value, str) or not value:
        raise NotAClick(f"{key} is missing or not a string")
    return value
