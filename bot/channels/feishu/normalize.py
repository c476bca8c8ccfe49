"""Feishu `im.message.receive_v1` → InboundMessage.

Text and post (rich text) are read; other content becomes a short placeholder such as
"[image]" so the conversation stays whole. Mentions appear in the raw text as keys
("@_user_1"); they are resolved to names, and the bot's own mention is recognised by its
open_id, never by its display name (names are not unique).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from lark_oapi.api.im.v1 import P2ImMessageReceiveV1
from lark_oapi.core.json import JSON

from bot.channels.messages import InboundMessage, Mention

PLATFORM = "feishu"
PLACEHOLDERS = {
    "image": "[image]",
    "file": "[file]",
    "audio": "[audio]",
    "media": "[video]",
    "sticker": "[sticker]",
    "interactive": "[card]",
    "share_chat": "[shared chat]",
    "share_user": "[shared contact]",
    "merge_forward": "[merged forward]",
    "location": "[location]",
    "todo": "[todo]",
    "hongbao": "[red packet]",
    "share_calendar_event": "[calendar event]",
    "calendar": "[calendar event]",
    "video_chat": "[video call]",
    "system": "[system message]",
    "folder": "[folder]",
}


class NotAMessage(ValueError):
    """The event lacks what every message has (id, chat, sender)."""


def event_body(event: P2ImMessageReceiveV1) -> dict[str, Any]:
    """The SDK's parsed event (long connection) back as the webhook's JSON envelope."""
    body = json.loads(JSON.marshal(event))
    return body if isinstance(body, dict) else {}


def normalize(body: dict[str, Any], *, bot_open_id: str | None) -> InboundMessage:
    """Read the event envelope's dict directly: the webhook's hot path skips the SDK's model
    round trip (about a third of a millisecond per event)."""
    ev = _dict(body.get("event"))
    msg, sender = _dict(ev.get("message")), _dict(ev.get("sender"))
    sender_id = _dict(sender.get("sender_id")).get("open_id")
    if not msg.get("message_id") or not msg.get("chat_id") or not sender_id:
        raise NotAMessage("im.message.receive_v1 without message_id, chat_id or sender open_id")

    mentions = tuple(
        Mention(
            key=str(m.get("key") or ""),
            name=str(m.get("name") or ""),
            open_id=_dict(m.get("id")).get("open_id"),
        )
        for m in (msg.get("mentions") or [])
        if isinstance(m, dict)
    )
    mentioned_bot = bool(bot_open_id) and any(m.open_id == bot_open_id for m in mentions)
    message_type = str(msg.get("message_type") or "unknown")
    raw_text = content_text(message_type, msg.get("content"))
    return InboundMessage(
        platform=PLATFORM,
        message_id=str(msg["message_id"]),
        chat_id=str(msg["chat_id"]),
        chat_type="p2p" if msg.get("chat_type") == "p2p" else "group",
        sender_id=str(sender_id),
        sender_type=str(sender.get("sender_type") or "user"),
        text=resolve_mentions(raw_text, mentions, drop_open_id=None),
        addressed_text=resolve_mentions(raw_text, mentions, drop_open_id=bot_open_id),
        message_type=message_type,
        created_at=_ms_to_datetime(msg.get("create_time")),
        mentioned_bot=mentioned_bot,
        mentions=mentions,
        parent_id=msg.get("parent_id") or None,
        root_id=msg.get("root_id") or None,
        thread_id=msg.get("thread_id") or None,
        raw=ev,
    )


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def content_text(message_type: str, content: Any) -> str:
    try:
        data = json.loads(content) if isinstance(content, str) and content else {}
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    if message_type == "text":
        return str(data.get("text", ""))
    if message_type == "post":
        return post_text(data)
    if message_type == "file" and data.get("file_name"):
        return f"[file: {data['file_name']}]"
    return PLACEHOLDERS.get(message_type, f"[{message_type}]")


def post_text(data: dict[str, Any]) -> str:
    """Rich text: the title, then each paragraph's elements in order."""
    if "content" not in data:  # some payloads wrap the post in a locale: {"zh_cn": {...}}
        data = next((v for v in data.values() if isinstance(v, dict) and "content" in v), {})
    lines = [str(data["title"])] if data.get("title") else []
    for paragraph in data.get("content") or []:
        if isinstance(paragraph, list):
            lines.append("".join(_post_element(el) for el in paragraph if isinstance(el, dict)))
    return "\n".join(lines).strip()


def _post_element(el: dict[str, Any]) -> str:
    tag = el.get("tag")
    if tag in ("text", "md"):
        return str(el.get("text", ""))
    if tag == "a":
        return str(el.get("text") or el.get("href") or "")
    if tag == "at":
        # In received posts `user_id` holds the mention key ("@_user_1"), resolved later.
        return str(el.get("user_id") or f"@{el.get('user_name', '')}")
    if tag == "code_block":
        return f"\n```{el.get('language', '')}\n{el.get('text', '')}\n```\n"
    if tag == "img":
        return "[image]"
    if tag == "media":
        return "[video]"
    if tag == "emotion":
        return f"[{el.get('emoji_type', 'emoji')}]"
    if tag == "hr":
        return "\n---\n"
    return ""


def resolve_mentions(text: str, mentions: tuple[Mention, ...], *, drop_open_id: str | None) -> str:
    # Longest keys first, so "@_user_10" is not mistaken for "@_user_1" + "0".
    for m in sorted(mentions, key=lambda m: len(m.key), reverse=True):
        if not m.key:
            continue
        replacement = "" if drop_open_id and m.open_id == drop_open_id else f"@{m.name}"
        text = text.replace(m.key, replacement)
    return text.strip() if drop_open_id else text


def _ms_to_datetime(value: Any) -> datetime:
    try:
        return datetime.fromtimestamp(int(value) / 1000, UTC)
    except (TypeError, ValueError):
        raise NotAMessage(f"bad create_time {value!r}") from None
