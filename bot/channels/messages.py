"""A message as every channel hands it to ingest, whatever the platform."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class Mention:
    key: str  # the placeholder in the raw text, e.g. "@_user_1"
    name: str
    open_id: str | None


@dataclass(frozen=True)
class AttachmentRef:
    """A resource a message carries (Feishu: an image_key or file_key), to be fetched."""

    key: str
    kind: str  # image | file | audio | media
    name: str = ""
    size: int | None = None  # as the sender's client declared it, if it did
    duration_ms: int | None = None  # audio and video


@dataclass(frozen=True)
class InboundMessage:
    platform: str
    message_id: str
    chat_id: str
    chat_type: str  # p2p | group
    sender_id: str
    text: str  # mentions resolved to "@Name"; non-text content as a placeholder like "[image]"
    # The text with the bot's own @mention taken out: what the user said to the bot.
    addressed_text: str
    message_type: str
    created_at: datetime
    mentioned_bot: bool = False
    mentions: tuple[Mention, ...] = ()
    parent_id: str | None = None
    root_id: str | None = None
    thread_id: str | None = None
    sender_type: str = "user"
    attachments: tuple[AttachmentRef, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_payload(self) -> dict[str, Any]:
        """JSON for inbox items: everything the Bot needs, nothing platform-raw. (Built by
        hand: `dataclasses.asdict` deep-copies, and this runs for every message ingested.)"""
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "raw"}
        data["created_at"] = self.created_at.isoformat()
        data["mentions"] = [vars(m) for m in self.mentions]
        data["attachments"] = [vars(a) for a in self.attachments]
        return data
