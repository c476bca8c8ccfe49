"""A click on a card's button, as every channel hands it to ingest, whatever the platform.

Stored like a message (`Ingest.accept_click`): once per platform and `click-<click_id>` in
inbound_events, so a redelivered callback is a duplicate on every replica, and handed to the
Bot as an inbox item of kind `click`, which the Bot handles like the slash command (or answer,
or verdict) the button stands for, as the clicker.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.channels.cards import InvalidCard, parse_action

CLICK_KIND = "click"  # the inbox item's kind
MAX_CLICK_ID = 120  # inbound_events.message_id is 128 characters, "click-" included
MAX_ID = 128  # chat, operator and message ids: the columns that keep them


class InvalidClick(ValueError):
    """A callback that is not a click on one of our buttons; the text is the one-line reason."""


@dataclass(frozen=True)
class InboundClick:
    platform: str
    click_id: str  # the platform's id of this callback: the same on redelivery
    chat_id: str
    chat_type: str  # p2p | group
    operator_id: str  # who clicked (open_id)
    card_message_id: str  # the platform id of the card's message
    action: dict[str, str]  # the button's `action`, as sent (checked: cards.parse_action)
    created_at: datetime

    def __post_init__(self) -> None:
        if self.chat_type not in ("p2p", "group"):
            raise InvalidClick(f"a click's chat type is p2p or group, not {self.chat_type!r}")
        for what, value, most in (
            ("click id", self.click_id, MAX_CLICK_ID),
            ("chat id", self.chat_id, MAX_ID),
            ("operator id", self.operator_id, MAX_ID),
            ("card message id", self.card_message_id, MAX_ID),
        ):
            if not value or len(value) > most:
                raise InvalidClick(f"a click's {what} must be 1 to {most} characters")
        try:
            parse_action(self.action)
        except InvalidCard as exc:
            raise InvalidClick(str(exc)) from None

    @property
    def event_key(self) -> str:
        """Its key among inbound events (their `message_id` column)."""
        return f"click-{self.click_id}"

    def to_payload(self) -> dict[str, Any]:
        """JSON for the inbox item (and the stored event)."""
        return {
            "platform": self.platform,
            "click_id": self.click_id,
            "chat_id": self.chat_id,
            "chat_type": self.chat_type,
            "operator_id": self.operator_id,
            "card_message_id": self.card_message_id,
            "action": dict(self.action),
            "created_at": self.created_at.isoformat(),
        }

    @classmethod
    def from_payload(cls, data: dict[str, Any]) -> InboundClick:
        return cls(
            platform=str(data["platform"]),
            click_id=str(data["click_id"]),
            chat_id=str(data["chat_id"]),
            chat_type=str(data["chat_type"]),
            operator_id=str(data["operator_id"]),
            card_message_id=str(data["card_message_id"]),
            action=parse_action(data["action"]),
            created_at=datetime.fromisoformat(str(data["created_at"])),
        )
