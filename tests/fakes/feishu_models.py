"""Data types and documented error codes shared by the Feishu fake and its event sender.

Every error code here is quoted from the Feishu Open Platform docs (open.feishu.cn, server-docs):
`im-v1/message/create` and `.../reply` (error tables: all HTTP 400),
`api-call-guide/generic-error-code` (the 9999xxxx gateway codes),
`im-v1/message-reaction/{create,delete,list}` (the 2310xx reaction codes), and
`api-call-guide/frequency-control` (HTTP 429, code 99991400, headers `x-ogw-ratelimit-limit` /
`x-ogw-ratelimit-reset`).
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from multidict import CIMultiDict

JSONDict = dict[str, Any]

# (code, msg) pairs, exactly as the docs spell the English description.
FIELD_VALIDATION = (99992402, "field validation failed")
MISSING_TOKEN = (
    99991661,
    "Missing access token for authorization. Please make a request with token attached.",
)
INVALID_TOKEN = (
    99991663,
    "Invalid access token for authorization. Please make a request with token attached.",
)
MALFORMED_TOKEN = (99991671, "Invalid token: must start with t-/u-")
# generic-error-code: the app lacks the API's permission; the scopes follow the text, as
# "Access denied. One of the following scopes is required: [speech_to_text:speech]".
SCOPE_MISSING = (99991672, "Access denied. One of the following scopes is required: ")
RATE_LIMITED = (99991400, "request trigger frequency limit")
RESOURCE_NOT_FOUND = (99991201, "resource not find")
OPEN_IDS_NOT_EXIST = (99992351, "these open ids not existed")
MESSAGE_IDS_NOT_EXIST = (99992354, "these ids not existed")
CHAT_IDS_NOT_EXIST = (99992356, "these open_chat ids not existed")
INVALID_PARAM = (230001, "Your request contains an invalid request parameter.")
BOT_NOT_IN_CHAT = (230002, "The bot can not be outside the group.")
# A user token reading a chat its user is not in (left, removed, or never a member). From
# memory, as the im error table we could reach does not say which code a user token gets.
USER_NOT_IN_CHAT = (230027, "Lack of necessary permissions")
MESSAGE_RECALLED = (230011, "The message is recalled.")
CHAT_RATE_LIMITED = (230020, "This operation triggers the frequency limit.")
CONTENT_TOO_LONG = (230025, "The length of the message content reaches its limit.")
CARD_INVALID = (230099, "Failed to create card content.")
# message-reaction create/delete/list error tables (HTTP 400). 231007 is the delete doc's
# code for a reaction that is not there (or not the caller's); the rest are shared.
REACTION_TYPE_INVALID = (231001, "reaction type is invalid.")
REACTION_MESSAGE_NOT_FOUND = (231003, "The message is not found, maybe not exist or deleted.")
REACTION_NOT_FOUND = (231007, "The reaction is not found.")
# im-v1/message/get-2 ("获取消息中的资源文件") error table (HTTP 400). The page's request
# part (100 MB limit, no stickers, no merged forward's inner messages, the bot in the chat)
# was checked; its error table was not in the stored copy searched when this was written,
# so the codes' meanings and these English messages are from the doc as remembered:
# recheck them against the page. 234008 and 234043 are the two a resource of a message the
# bot may see can still answer (not downloadable by this app; a kind of message whose
# resources cannot be downloaded, such as a merged forward's inner messages).
RESOURCE_INVALID_PARAM = (234001, "Invalid request param.")
RESOURCE_NOT_IN_MESSAGE = (234003, "File not in msg.")
RESOURCE_BOT_NOT_IN_CHAT = (234004, "App not in chat.")
RESOURCE_NOT_THE_SENDER = (234008, "The app is not the resource sender.")
RESOURCE_TOO_LARGE = (234037, "Downloaded file size exceeds limit.")
RESOURCE_UNSUPPORTED = (234043, "Unsupported message type.")
# auth/v3: the doc points at the generic table; 10003 "invalid param", and a wrong secret is
# answered with 10014 "app secret invalid" in every captured response we found.
APP_INVALID_PARAM = (10003, "invalid param")
APP_SECRET_INVALID = (10014, "app secret invalid")

# Documented size limits of the request body (create/reply docs, `content` field):
# "文本消息请求体最大不能超过 150 KB", "卡片消息、富文本消息请求体最大不能超过 30 KB".
TEXT_LIMIT_BYTES = 150 * 1024
RICH_LIMIT_BYTES = 30 * 1024
UUID_MAX_LEN = 50
UUID_WINDOW_SECONDS = 3600
MSG_TYPES = frozenset(
    {
        "text",
        "post",
        "image",
        "file",
        "audio",
        "media",
        "sticker",
        "interactive",
        "share_chat",
        "share_user",
        "system",
    }
)


def new_id(prefix: str, nbytes: int = 16) -> str:
    return prefix + secrets.token_hex(nbytes)


def stable_hex(seed: str, n: int) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:n]


def ms(value: datetime | float | int) -> int:
    """Milliseconds since the epoch from an aware datetime or epoch seconds."""
    if isinstance(value, datetime):
        return int(value.timestamp() * 1000)
    return int(value * 1000)


class FeishuApiError(Exception):
    """Raised inside the fake to answer with a Feishu error envelope."""

    def __init__(
        self,
        code_msg: tuple[int, str],
        *,
        http_status: int = 400,
        detail: str | None = None,
        headers: dict[str, str] | None = None,
        error: JSONDict | None = None,
    ) -> None:
        code, msg = code_msg
        super().__init__(f"{code} {msg}")
        self.code = code
        self.msg = f"{msg} ext={detail}" if detail else msg
        self.http_status = http_status
        self.headers = headers or {}
        self.error = error or {}


@dataclass
class Mention:
    """An @mention. `key` defaults to `@_user_<n>` by position, as Feishu numbers them."""

    open_id: str
    name: str
    key: str | None = None
    user_id: str | None = None
    union_id: str | None = None
    tenant_key: str = "tenant_fake"

    def event_dict(self, index: int) -> JSONDict:
        return {
            "key": self.key or f"@_user_{index + 1}",
            "id": {
                "union_id": self.union_id or "on_" + stable_hex("union" + self.open_id, 32),
                "user_id": self.user_id or stable_hex("user" + self.open_id, 8),
                "open_id": self.open_id,
            },
            "name": self.name,
            "tenant_key": self.tenant_key,
        }

    def api_dict(self, index: int) -> JSONDict:
        """The REST shape (message create/list): `id` is a plain open_id string."""
        return {
            "key": self.key or f"@_user_{index + 1}",
            "id": self.open_id,
            "id_type": "open_id",
            "name": self.name,
            "tenant_key": self.tenant_key,
        }


@dataclass
class Chat:
    chat_id: str
    name: str
    chat_type: str = "group"  # "group" | "p2p"
    bot_in_chat: bool = True
    p2p_user: str | None = None
    description: str = ""
    owner_id: str = "ou_owner"
    # Users in the chat (open_ids): what a user token may list and read (p2p_user is too).
    members: set[str] = field(default_factory=set)


@dataclass
class HistoryMessage:
    """One stored message, as `GET /open-apis/im/v1/messages` lists it."""

    message_id: str
    chat_id: str
    content: str  # a JSON string, as on the wire
    msg_type: str = "text"
    create_time_ms: int = 0
    update_time_ms: int | None = None
    sender_id: str = "ou_user"
    sender_id_type: str = "open_id"  # "open_id" for users, "app_id" for apps
    sender_type: str = "user"  # "user" | "app"
    root_id: str | None = None
    parent_id: str | None = None
    thread_id: str | None = None
    mentions: list[Mention] = field(default_factory=list)
    deleted: bool = False
    updated: bool = False
    tenant_key: str = "tenant_fake"
    upper_message_id: str | None = None  # a merged forward's sub-message: the forward

    @classmethod
    def text(
        cls,
        text: str,
        *,
        create_time: datetime | float,
        sender_open_id: str = "ou_user",
        message_id: str | None = None,
        chat_id: str = "",
        mentions: list[Mention] | None = None,
        root_id: str | None = None,
        parent_id: str | None = None,
        thread_id: str | None = None,
    ) -> HistoryMessage:
        """A user's text message; `create_time` is a datetime or epoch seconds."""
        return cls(
            message_id=message_id or new_id("om_"),
            chat_id=chat_id,
            content=json.dumps({"text": text}, ensure_ascii=False),
            create_time_ms=ms(create_time),
            sender_id=sender_open_id,
            mentions=list(mentions or []),
            root_id=root_id,
            parent_id=parent_id,
            thread_id=thread_id,
        )

    def to_api(self) -> JSONDict:
        item: JSONDict = {"message_id": self.message_id}
        for key in ("root_id", "parent_id", "thread_id", "upper_message_id"):
            if getattr(self, key):
                item[key] = getattr(self, key)
        content = self.content
        if self.deleted:
            content = json.dumps({"text": "This message was recalled"})
        item.update(
            msg_type=self.msg_type,
            create_time=str(self.create_time_ms),
            update_time=str(self.update_time_ms or self.create_time_ms),
            deleted=self.deleted,
            updated=self.updated,
            chat_id=self.chat_id,
            sender={
                "id": self.sender_id,
                "id_type": self.sender_id_type,
                "sender_type": self.sender_type,
                "tenant_key": self.tenant_key,
            },
            body={"content": content},
        )
        if self.mentions:
            item["mentions"] = [m.api_dict(i) for i, m in enumerate(self.mentions)]
        return item


@dataclass
class PatchedCard:
    """A card the bot updated in place (PATCH im/v1/messages/:message_id), in order."""

    message_id: str
    content: str  # the new card JSON string, as the client sent it
    app_id: str

    @property
    def body(self) -> Any:
        return json.loads(self.content)


@dataclass
class SentMessage:
    """A message the bot actually created (create or reply), in order of creation."""

    message_id: str
    chat_id: str
    msg_type: str
    content: str  # the JSON string as stored (text @-tags rewritten to @_user_n keys)
    request_content: str  # the JSON string exactly as the client sent it
    receive_id: str
    receive_id_type: str  # "reply" for replies
    app_id: str
    uuid: str | None = None
    reply_to: str | None = None
    reply_in_thread: bool = False
    root_id: str | None = None
    parent_id: str | None = None
    thread_id: str | None = None
    create_time_ms: int = 0

    @property
    def body(self) -> Any:
        return json.loads(self.content)

    @property
    def text(self) -> str | None:
        body = self.body
        return body.get("text") if isinstance(body, dict) else None


@dataclass
class RecordedRequest:
    method: str
    path: str
    query: dict[str, str]
    headers: CIMultiDict[str]  # case-insensitive, as received
    raw_body: bytes
    json: Any
    status: int | None = None  # None when the connection was dropped without a response
    response: Any = None
    time: float = 0.0
    peer: str = ""  # the client's address and port: one per connection it opened

    @property
    def authorization(self) -> str | None:
        return self.headers.get("Authorization")
