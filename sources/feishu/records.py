"""The Feishu source record, shared by webhook ingest and the history sync: one row per
Feishu `message_id` in source `feishu:<chat_id>`, scoped `dm:<peer open_id>` or
`group:<chat_id>`. Whichever path writes a message first wins; the other is a no-op.

Kept apart from `sources.feishu.history` so ingest does not import the Feishu SDK.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sources.feishu.owner_units import CHATS_KIND
from storage.repos.source_records import NewRecord

KIND = "feishu"
PLATFORM = "feishu"


@dataclass(frozen=True)
class MentionRef:
    key: str
    name: str
    open_id: str | None


def source_name(chat_id: str) -> str:
    return f"{KIND}:{chat_id}"


def holds_chat_messages(source: str) -> bool:
    """A chat's source: the bot's (`feishu:<chat_id>`) or one read as the owner
    (`chats:<chat_id>`); its records are chat messages, not mail."""
    return source.startswith((f"{KIND}:", f"{CHATS_KIND}:"))


def chat_scope(chat_type: str, chat_id: str, peer_open_id: str | None) -> str:
    """`dm:<peer open_id>` for a direct message, `group:<chat_id>` for a group."""
    if chat_type == "p2p":
        return f"dm:{peer_open_id or chat_id}"
    return f"group:{chat_id}"


def message_record(
    *,
    chat_id: str,
    scope: str,
    message_id: str,
    text: str,
    sender_id: str | None,
    sender_type: str | None,
    message_type: str,
    created_at: datetime | None,
    root_id: str | None = None,
    parent_id: str | None = None,
    thread_id: str | None = None,
    mentions: Sequence[MentionRef] = (),
    origin: str,
    deleted: bool = False,
    source: str | None = None,
) -> NewRecord:
    """`source`: the unit the record belongs to, when not the chat's own `feishu:<chat_id>`
    (a chat read as the owner)."""
    payload: dict[str, Any] = {
        "origin": origin,  # "event" (webhook / long connection) or "history" (sync)
        "chat_id": chat_id,
        "message_type": message_type,
        "sender_id": sender_id,
        "sender_type": sender_type,
    }
    for key, value in (("root_id", root_id), ("parent_id", parent_id), ("thread_id", thread_id)):
        if value:
            payload[key] = value
    if mentions:
        payload["mentions"] = [
            {"key": m.key, "name": m.name, "open_id": m.open_id} for m in mentions
        ]
    if deleted:
        payload["deleted"] = True
    return NewRecord(
        source=source or source_name(chat_id),
        external_id=message_id,
        scope=scope,
        text=text,
        sent_at=created_at,
        author=sender_id,
        thread_key=thread_id or root_id,
        payload=payload,
    )
