"""Looking a message up on its platform: what the Bot needs from a channel to show the message
a reply quotes, or the messages a merged forward holds, when they are not stored here.

Channel-neutral, so the Bot (which may not import a channel: `.importlinter`) asks
`services.lookups[platform]`, registered by the channel at start like `services.readiness`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True)
class FoundMessage:
    message_id: str
    chat_id: str | None
    sender_id: str | None
    sent_at: datetime | None
    message_type: str
    text: str  # its words, mentions resolved; what it carries as placeholders ("[image]")
    deleted: bool = False  # recalled: `text` is then not its words
    upper_message_id: str | None = None  # a merged forward's sub-message: the forward
    carries: tuple[str, ...] = ()  # what it carries, named: "image img_v3_…", "file a.pdf"


class MessageUnavailable(Exception):
    """The message cannot be had (not found, no permission, the platform unreachable): the
    text is one line, for the user."""


class MessageLookup(Protocol):
    async def message(self, message_id: str) -> list[FoundMessage]:
        """The message, then (a merged forward) each message it holds, in order. Raises
        MessageUnavailable."""
        ...
