"""Feishu `im.message.receive_v1` → InboundMessage.

Text and post (rich text) are read; other content becomes a short placeholder such as
"[image]" so the conversation stays whole. Mentions appear in the raw text as keys
("@_user_1"); they are resolved to names, and the bot's own mention is recognised by its
open_id, never by its display name (names are not unique).

Whatever arrives is read defensively: an event without a well-formed id, chat, sender or time
is NotAMessage (the webhook answers 400); a field of the wrong type elsewhere is left out,
content that cannot be read becomes "[unreadable content]", and the message is kept, with one
log line naming what was left out.
"""

from __future__ import annotations

import json
import logging
import reprlib
from datetime import UTC, datetime
from typing import Any

from bot.channels.feishu.resources import attachment_refs
from bot.channels.messages import InboundMessage, Mention
from storage.types import UNSTORABLE

log = logging.getLogger(__name__)

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
UNREADABLE = "[unreadable content]"
MESSAGE_EVENT = "im.message.receive_v1"
MAX_ID_LENGTH = 128  # the width of the id columns (inbound_events, conversations)
LATEST_CREATE_TIME_MS = 32_503_680_000_000  # 3000-01-01: beyond it, not a clock but garbage


class NotAMessage(ValueError):
    """The event lacks what every message has (id, chat, sender, time), or has it garbled."""


def normalize(body: dict[str, Any], *, bot_open_id: str | None) -> InboundMessage:
    """Read the event envelope's dict directly (the webhook's and the long connection's).

    What identifies the message must be there and well-formed, or it is NotAMessage; anything
    else of the wrong type is left out and named in one log line, and the message is kept."""
    ev = _dict(body.get("event"))
    msg, sender = _dict(ev.get("message")), _dict(ev.get("sender"))
    message_id = _required_id(msg.get("message_id"), "message_id")
    chat_id = _required_id(msg.get("chat_id"), "chat_id")
    sender_id = _required_id(_dict(sender.get("sender_id")).get("open_id"), "sender open_id")
    created_at = _ms_to_datetime(msg.get("create_time"))

    ignored: list[str] = []
    mentions = _mentions(msg.get("mentions"), ignored)
    mentioned_bot = bool(bot_open_id) and any(m.open_id == bot_open_id for m in mentions)
    message_type = _text(msg.get("message_type"), "message_type", ignored) or "unknown"
    raw_text, unreadable = _read_content(message_type, msg.get("content"))
    if unreadable:
        ignored.append(unreadable)
    attachments = attachment_refs(message_type, msg.get("content"), ignored)
    chat_type = _text(msg.get("chat_type"), "chat_type", ignored)
    message = InboundMessage(
        platform=PLATFORM,
        message_id=message_id,
        chat_id=chat_id,
        chat_type="p2p" if chat_type == "p2p" else "group",
        sender_id=sender_id,
        sender_type=_text(sender.get("sender_type"), "sender_type", ignored) or "user",
        text=resolve_mentions(raw_text, mentions, drop_open_id=None),
        addressed_text=resolve_mentions(raw_text, mentions, drop_open_id=bot_open_id),
        message_type=message_type,
        created_at=created_at,
        mentioned_bot=mentioned_bot,
        mentions=mentions,
        parent_id=_optional_id(msg.get("parent_id"), "parent_id", ignored),
        root_id=_optional_id(msg.get("root_id"), "root_id", ignored),
        thread_id=_optional_id(msg.get("thread_id"), "thread_id", ignored),
        attachments=attachments,
        raw=ev,
    )
    if ignored:
        log.warning("Feishu message %s kept without: %s", message_id, "; ".join(ignored))
    return message


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _is_id(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= MAX_ID_LENGTH and value.isprintable()


def _required_id(value: Any, what: str) -> str:
    if not _is_id(value):
        raise NotAMessage(f"im.message.receive_v1 without a usable {what}: {reprlib.repr(value)}")
    return str(value)


def _optional_id(value: Any, what: str, ignored: list[str]) -> str | None:
    if value is None or value == "":
        return None
    if _is_id(value):
        return str(value)
    ignored.append(f"{what} {reprlib.repr(value)}")
    return None


def _text(value: Any, what: str, ignored: list[str]) -> str:
    if value is None or isinstance(value, str):
        return value or ""
    ignored.append(f"{what} {reprlib.repr(value)}")
    return ""


def _mentions(value: Any, ignored: list[str]) -> tuple[Mention, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        ignored.append(f"mentions {reprlib.repr(value)}")
        return ()
    mentions = []
    for m in value:
        if not isinstance(m, dict):
            ignored.append(f"mention {reprlib.repr(m)}")
            continue
        key = _text(m.get("key"), "mention key", ignored)
        name = _text(m.get("name"), "mention name", ignored)
        open_id = _optional_id(_dict(m.get("id")).get("open_id"), "mention open_id", ignored)
        mentions.append(Mention(key, name, open_id))
    return tuple(mentions)


def content_text(message_type: str, content: Any) -> str:
    """A message's content (a JSON string) as text; UNREADABLE when it cannot be read."""
    return _read_content(message_type, content)[0]


def _read_content(message_type: str, content: Any) -> tuple[str, str | None]:
    """The text, and what of the content was unreadable or replaced (None: nothing)."""
    if content is None or content == "":
        data: Any = {}
    elif not isinstance(content, str):
        data = None
    else:
        try:
            data = json.loads(content)
        except (ValueError, RecursionError):  # not JSON, a number too long, nested too deep
            data = None
    if not isinstance(data, dict):
        problem = f"content {reprlib.repr(content)}"
        if message_type in ("text", "post"):
            return UNREADABLE, problem
        return PLACEHOLDERS.get(message_type, f"[{message_type}]"), problem
    if message_type == "text":
        text = data.get("text", "")
        if not isinstance(text, str):
            return UNREADABLE, f"text {reprlib.repr(text)}"
    elif message_type == "post":
        text = post_text(data)
    elif message_type in ("file", "audio", "media"):
        text = placeholder(message_type, data)
    else:
        return PLACEHOLDERS.get(message_type, f"[{message_type}]"), None
    storable = UNSTORABLE.sub("\ufffd", text)  # the database refuses NUL and lone surrogates
    return storable, None if storable == text else "a NUL or lone surrogate in the text"


def placeholder(message_type: str, data: dict[str, Any]) -> str:
    """A file, voice or video message as a line saying what it is: "[file: a.pdf]",
    "[voice message, 12 s]" (the content's `duration` is in milliseconds)."""
    name = data.get("file_name")
    duration = data.get("duration")
    seconds = (
        f", {round(duration / 1000)} s"
        if isinstance(duration, int) and not isinstance(duration, bool) and duration >= 0
        else ""
    )
    if message_type == "audio":
        return f"[voice message{seconds}]"
    if message_type == "media":
        return (
            f"[video: {name}{seconds}]" if isinstance(name, str) and name else f"[video{seconds}]"
        )
    if isinstance(name, str) and name:
        return f"[file: {name}]"
    return PLACEHOLDERS.get(message_type, f"[{message_type}]")


def post_text(data: dict[str, Any]) -> str:
    """Rich text: the title, then each paragraph's elements in order."""
    if "content" not in data:  # some payloads wrap the post in a locale: {"zh_cn": {...}}
        data = next((v for v in data.values() if isinstance(v, dict) and "content" in v), {})
    title = data.get("title")
    lines = [title] if isinstance(title, str) and title else []
    paragraphs = data.get("content")
    for paragraph in paragraphs if isinstance(paragraphs, list) else ():
        if isinstance(paragraph, list):
            lines.append("".join(_post_element(el) for el in paragraph if isinstance(el, dict)))
    return "\n".join(lines).strip()


def _post_element(el: dict[str, Any]) -> str:
    tag, text = el.get("tag"), _str(el.get("text"))
    if tag in ("text", "md"):
        return text
    if tag == "a":
        return text or _str(el.get("href"))
    if tag == "at":
        # In received posts `user_id` holds the mention key ("@_user_1"), resolved later.
        return _str(el.get("user_id")) or f"@{_str(el.get('user_name'))}"
    if tag == "code_block":
        return f"\n```{_str(el.get('language'))}\n{text}\n```\n"
    if tag == "img":
        return "[image]"
    if tag == "media":
        return "[video]"
    if tag == "emotion":
        return f"[{_str(el.get('emoji_type')) or 'emoji'}]"
    if tag == "hr":
        return "\n---\n"
    return ""


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def resolve_mentions(text: str, mentions: tuple[Mention, ...], *, drop_open_id: str | None) -> str:
    # Longest keys first, so "@_user_10" is not mistaken for "@_user_1" + "0".
    for m in sorted(mentions, key=lambda m: len(m.key), reverse=True):
        if not m.key:
            continue
        replacement = "" if drop_open_id and m.open_id == drop_open_id else f"@{m.name}"
        text = text.replace(m.key, replacement)
    return text.strip() if drop_open_id else text


def _ms_to_datetime(value: Any) -> datetime:
    """Feishu's create_time: milliseconds since the epoch, as a string of digits."""
    ms: int | None = None
    if isinstance(value, str) and value.isascii() and value.isdecimal() and len(value) <= 17:
        ms = int(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        ms = value
    if ms is None or not 0 <= ms < LATEST_CREATE_TIME_MS:
        raise NotAMessage(f"bad create_time {reprlib.repr(value)}")
    return datetime.fromtimestamp(ms / 1000, UTC)
