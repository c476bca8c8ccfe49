"""`GET /open-apis/im/v1/messages/:message_id` as the channel's MessageLookup.

The answer (open.feishu.cn/document/server-docs/im-v1/message/get) is `data.items`: the message,
and for a `merge_forward` its sub-messages after it, each with `upper_message_id` naming the
forward. Each item has `msg_type`, `create_time` (ms, a string), `deleted`, `chat_id`,
`sender` {`id`, `sender_type`}, `body.content` (a JSON string) and `mentions`. The bot must be
in the message's chat; a message it may not read is an error code, and one recalled comes
back `deleted`."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from bot.channels.feishu.api import FeishuApi, FeishuApiError, FeishuUnreachable
from bot.channels.feishu.normalize import content_text, resolve_mentions
from bot.channels.lookup import FoundMessage, MessageUnavailable
from bot.channels.messages import Mention
from sources.feishu.sdk import GetMessageRequest

API = "im.message.get"
ATTEMPTS = 2  # a turn waits for it: one retry, not the sender's patience
MAX_WAIT = 2.0
MAX_ITEMS = 200
_RESOURCE_KEYS = ("image_key", "file_key")


class FeishuMessageLookup:
    def __init__(self, api: FeishuApi) -> None:
        self.api = api

    async def message(self, message_id: str) -> list[FoundMessage]:
        request = GetMessageRequest.builder().message_id(message_id).build()
        api = self.api
        try:
            resp = await api.call(
                API, lambda opt: api.send(request, opt), attempts=ATTEMPTS, max_wait=MAX_WAIT
            )
        except FeishuApiError as exc:
            raise MessageUnavailable(f"Feishu refused it ({exc.code}: {exc.msg})") from exc
        except FeishuUnreachable as exc:
            raise MessageUnavailable("Feishu is unreachable") from exc
        items = [i for i in resp.data.get("items") or [] if isinstance(i, dict)]
        found = [read_item(i) for i in items[:MAX_ITEMS] if i.get("message_id")]
        if not found:
            raise MessageUnavailable("Feishu answered without the message")
        return found


def read_item(item: dict[str, Any]) -> FoundMessage:
    message_type = str(item.get("msg_type") or "unknown")
    content = _dict(item.get("body")).get("content")
    mentions = tuple(
        Mention(str(m.get("key") or ""), str(m.get("name") or ""), _str(m.get("id")))
        for m in item.get("mentions") or []
        if isinstance(m, dict)
    )
    sender = _dict(item.get("sender"))
    return FoundMessage(
        message_id=str(item["message_id"]),
        chat_id=_str(item.get("chat_id")),
        sender_id=_str(sender.get("id")),
        sent_at=_ms(item.get("create_time")),
        message_type=message_type,
        text=resolve_mentions(content_text(message_type, content), mentions, drop_open_id=None),
        deleted=bool(item.get("deleted")),
        upper_message_id=_str(item.get("upper_message_id")),
        carries=_carries(message_type, content),
    )


def _carries(message_type: str, content: Any) -> tuple[str, ...]:
    """The resources a message carries, named (an image's key, a file's name)."""
    try:
        data = json.loads(content) if isinstance(content, str) else {}
    except ValueError:
        return ()
    if not isinstance(data, dict):
        return ()
    if message_type == "file" and isinstance(data.get("file_name"), str):
        return (f"file {data['file_name']}",)
    kind = {"image": "image", "audio": "voice message", "media": "video"}.get(message_type)
    key = next((data[k] for k in _RESOURCE_KEYS if isinstance(data.get(k), str)), None)
    return (f"{kind} {key}",) if kind and key else ()


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _ms(value: Any) -> datetime | None:
    if isinstance(value, str) and value.isascii() and value.isdecimal() and len(value) <= 15:
        return datetime.fromtimestamp(int(value) / 1000, UTC)
    return None
