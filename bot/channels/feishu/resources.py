"""The resources a Feishu message carries (images, files, voice, video), read from its content.

The content shapes are Feishu's documented ones
(https://open.feishu.cn/document/server-docs/im-v1/message-content-description/message_content):
image {"image_key"}, file {"file_key", "file_name"}, audio {"file_key", "duration"},
media {"file_key", "image_key", "file_name", "duration"} (durations in milliseconds), and a
post's `img` {"image_key"} and `media` {"file_key"} elements. A resource whose key is missing
or malformed is left out and named in the message's one log line, never an exception.
"""

from __future__ import annotations

import json
import reprlib
from typing import Any

from bot.channels.messages import AttachmentRef

MAX_KEY_LENGTH = 256  # the width of attachments.resource_key
MAX_PER_MESSAGE = 20  # a post with more images than this is not a file cabinet
_WITH_RESOURCES = frozenset({"image", "file", "audio", "media", "post"})


def attachment_refs(
    message_type: str, content: Any, ignored: list[str]
) -> tuple[AttachmentRef, ...]:
    """The message's resources, in the order they appear; () for any other message."""
    if message_type not in _WITH_RESOURCES or not isinstance(content, str) or not content:
        return ()
    try:
        data = json.loads(content)
    except (ValueError, RecursionError):
        return ()  # the text reader has named the content already
    if not isinstance(data, dict):
        return ()
    refs: list[AttachmentRef] = []
    if message_type == "image":
        _add(refs, data.get("image_key"), "image", ignored)
    elif message_type == "file":
        _add(refs, data.get("file_key"), "file", ignored, name=data.get("file_name"))
    elif message_type in ("audio", "media"):
        _add(
            refs,
            data.get("file_key"),
            message_type,
            ignored,
            name=data.get("file_name"),
            duration=data.get("duration"),
        )
    else:
        for el in _post_elements(data):
            if el.get("tag") == "img":
                _add(refs, el.get("image_key"), "image", ignored)
            elif el.get("tag") == "media":
                _add(refs, el.get("file_key"), "media", ignored, name=el.get("file_name"))
    by_key: dict[str, AttachmentRef] = {}
    for ref in refs:
        by_key.setdefault(ref.key, ref)  # a post may show one image twice: fetched once
    unique = list(by_key.values())
    if len(unique) > MAX_PER_MESSAGE:
        ignored.append(
            f"{len(unique) - MAX_PER_MESSAGE} resources past the first {MAX_PER_MESSAGE}"
        )
    return tuple(unique[:MAX_PER_MESSAGE])


def _post_elements(data: dict[str, Any]) -> list[dict[str, Any]]:
    if "content" not in data:  # a post may be wrapped in a locale: {"zh_cn": {...}}
        data = next((v for v in data.values() if isinstance(v, dict) and "content" in v), {})
    paragraphs = data.get("content")
    return [
        el
        for paragraph in (paragraphs if isinstance(paragraphs, list) else ())
        if isinstance(paragraph, list)
        for el in paragraph
        if isinstance(el, dict)
    ]


def _add(
    refs: list[AttachmentRef],
    key: Any,
    kind: str,
    ignored: list[str],
    *,
    name: Any = None,
    duration: Any = None,
) -> None:
    if not (isinstance(key, str) and 0 < len(key) <= MAX_KEY_LENGTH and key.isprintable()):
        ignored.append(f"{kind} key {reprlib.repr(key)}")
        return
    refs.append(
        AttachmentRef(
            key=key,
            kind=kind,
            name=name[:512] if isinstance(name, str) else "",
            duration_ms=_natural(duration),
        )
    )


def _natural(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and value.isascii() and value.isdecimal() and len(value) <= 12:
        return int(value)
    return None
