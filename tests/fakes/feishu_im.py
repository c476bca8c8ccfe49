"""IM endpoints of the Feishu fake: message create/reply/list and chat list.

Shapes follow `server-docs/im-v1/message/{create,reply,list,get}` and `server-docs/group/chat/list`.

As a user (a `u-` token from feishu_oauth.py): `GET im/v1/chats` lists the groups the user is
in, bot or not ("获取 access_token 所代表的用户或者机器人所在的群列表", no p2p chats:
https://open.feishu.cn/document/server-docs/group/chat/list), and `GET im/v1/messages` reads a
chat the user is in, whether or not the bot is. The message list's page names only the tenant
token (https://open.feishu.cn/document/server-docs/im-v1/message/list); that a user token
reads it is what Lark's own OpenClaw plugin relies on (larksuite/openclaw-lark,
feishu_im_user_get_messages), not a documented promise. A chat the user is not in answers
USER_NOT_IN_CHAT (from memory, see feishu_models.py).
"""

from __future__ import annotations

import base64
import json
import re
from collections import deque
from typing import Any

from aiohttp import web

from .feishu_models import (
    BOT_NOT_IN_CHAT,
    CARD_INVALID,
    CHAT_IDS_NOT_EXIST,
    CHAT_RATE_LIMITED,
    CONTENT_TOO_LONG,
    FIELD_VALIDATION,
    INVALID_PARAM,
    MESSAGE_IDS_NOT_EXIST,
    MESSAGE_RECALLED,
    MSG_TYPES,
    OPEN_IDS_NOT_EXIST,
    RICH_LIMIT_BYTES,
    TEXT_LIMIT_BYTES,
    USER_NOT_IN_CHAT,
    UUID_MAX_LEN,
    UUID_WINDOW_SECONDS,
    Chat,
    FeishuApiError,
    HistoryMessage,
    JSONDict,
    Mention,
    PatchedCard,
    SentMessage,
    new_id,
    stable_hex,
)

_AT_TAG = re.compile(r'<at user_id="(ou_[^"]+)">([^<]*)</at>')
_CONTENT_KEYS = {
    "text": "text",
    "image": "image_key",
    "file": "file_key",
    "audio": "file_key",
    "media": "file_key",
    "sticker": "file_key",
    "share_chat": "chat_id",
    "share_user": "user_id",
}
_RECEIVE_ID_TYPES = ("open_id", "union_id", "user_id", "email", "chat_id")


def _field_error(field: str, description: str) -> FeishuApiError:
    violation = {"field": field, "description": description}
    return FeishuApiError(
        FIELD_VALIDATION, detail=f"{field}: {description}", error={"field_violations": [violation]}
    )


def _int_param(query: Any, name: str, default: int, low: int, high: int) -> int:
    raw = query.get(name)
    if raw in (None, ""):
        return default
    try:
        value = int(raw)
    except ValueError:
        raise _field_error(name, "must be an integer") from None
    if not low <= value <= high:
        raise _field_error(name, f"the value must be between {low} and {high}")
    return value


def _paginate(items: list[Any], query: Any, default: int, high: int) -> tuple[list[Any], JSONDict]:
    size = _int_param(query, "page_size", default, 1, high)
    token = query.get("page_token") or ""
    offset = 0
    if token:
        try:
            offset = int(json.loads(base64.urlsafe_b64decode(token.encode()))["o"])
        except (ValueError, KeyError, TypeError):
            raise _field_error("page_token", "invalid page_token") from None
    page = items[offset : offset + size]
    more = offset + size < len(items)
    meta: JSONDict = {"has_more": more}
    if more:
        meta["page_token"] = base64.urlsafe_b64encode(
            json.dumps({"o": offset + size}).encode()
        ).decode()
    return page, meta


def _check_content(msg_type: str, content: str) -> None:
    try:
        body = json.loads(content)
    except ValueError:
        body = None
    if msg_type == "interactive":
        # Card JSON 2.0 (feishu-cards/card-json-v2-structure) keeps its components in
        # `body.elements`; a 2.0 card without them does not render and is refused.
        v2 = isinstance(body, dict) and body.get("schema") == "2.0"
        body_of = body.get("body") if isinstance(body, dict) else None
        if not isinstance(body, dict) or (
            v2 and not (isinstance(body_of, dict) and isinstance(body_of.get("elements"), list))
        ):
            raise FeishuApiError(
                CARD_INVALID,
                detail="ErrCode: 200621; ErrMsg: parse card json "
                "err, please check whether the card json is correct",
            )
        return
    if not isinstance(body, dict):
        raise FeishuApiError(INVALID_PARAM, detail="invalid message content")
    if msg_type == "post":
        locales = body.get("post", body)
        ok = (
            isinstance(locales, dict)
            and bool(locales)
            and all(
                isinstance(v, dict)
                and isinstance(v.get("content"), list)
                and all(isinstance(line, list) for line in v["content"])
                for v in locales.values()
            )
        )
        if not ok:
            raise FeishuApiError(INVALID_PARAM, detail="invalid message content")
    elif msg_type in _CONTENT_KEYS and not isinstance(body.get(_CONTENT_KEYS[msg_type]), str):
        raise FeishuApiError(INVALID_PARAM, detail="invalid message content")


PATCH_WINDOW_SECONDS = 14 * 86_400
PATCH_QPS_PER_MESSAGE = 5


def _update_multi(card: str) -> bool:
    try:
        config = json.loads(card).get("config")
    except (ValueError, AttributeError):
        return False
    return isinstance(config, dict) and config.get("update_multi") is True


class ImHandlers:
    """Mixin for FeishuFake; keeps chats and messages and serves the IM endpoints."""

    tenant_key: str
    enforce_chat_qps: bool
    chat_qps: int
    sent: list[SentMessage]

    def __init__(self) -> None:
        self.chats: dict[str, Chat] = {}
        self.chat_messages: dict[str, list[HistoryMessage]] = {}
        self.messages: dict[str, HistoryMessage] = {}
        # a merged forward's id -> the messages it holds (GET message returns them after it)
        self.forwarded: dict[str, list[HistoryMessage]] = {}
        self._uuids: dict[tuple[str, str], tuple[str, float]] = {}
        self._send_times: dict[str, deque[float]] = {}
        self.patched: list[PatchedCard] = []
        self._patch_times: dict[str, deque[float]] = {}

    user_tokens: dict[str, Any]  # FeishuFake's (feishu_oauth.py)

    def now(self) -> float:
        raise NotImplementedError

    def authenticate(self, request: web.Request) -> str:
        raise NotImplementedError

    def _as_user(self, request: web.Request) -> str | None:
        """The open_id a user token stands for; None for the app's tenant token."""
        self.authenticate(request)
        token = request.headers.get("Authorization", "").partition(" ")[2].strip()
        return str(self.user_tokens[token].open_id) if token.startswith("u-") else None

    @staticmethod
    def _user_in(chat: Chat, user: str) -> bool:
        return user in chat.members or (chat.chat_type == "p2p" and chat.p2p_user == user)

    def check_card_reference(self, app_id: str, content: str) -> None:
        """A card message's entity exists (`feishu_cardkit.py`)."""
        raise NotImplementedError

    def add_im_routes(self, app: web.Application) -> None:
        app.router.add_post("/open-apis/im/v1/messages", self._create)
        app.router.add_get("/open-apis/im/v1/messages", self._list_messages)
        app.router.add_post("/open-apis/im/v1/messages/{message_id}/reply", self._reply)
        app.router.add_get("/open-apis/im/v1/chats", self._list_chats)
        app.router.add_patch("/open-apis/im/v1/messages/{message_id}", self._patch)
        app.router.add_get("/open-apis/im/v1/messages/{message_id}", self._get_message)

    # ---- state for tests -------------------------------------------------------------------

    def add_chat(
        self,
        chat_id: str,
        *,
        name: str,
        chat_type: str = "group",
        bot_in_chat: bool = True,
        p2p_user: str | None = None,
        members: set[str] | None = None,
    ) -> Chat:
        chat = Chat(chat_id, name, chat_type, bot_in_chat, p2p_user, members=set(members or ()))
        self.chats[chat_id] = chat
        self.chat_messages.setdefault(chat_id, [])
        return chat

    def add_history(self, chat_id: str, messages: list[HistoryMessage]) -> None:
        """Store messages as if they had been sent in `chat_id` (which must be added first)."""
        if chat_id not in self.chats:
            raise KeyError(f"add_chat({chat_id!r}) first")
        for message in messages:
            message.chat_id = chat_id
            message.tenant_key = self.tenant_key
            self._store(message)

    def history(self, chat_id: str) -> list[HistoryMessage]:
        return sorted(self.chat_messages.get(chat_id, []), key=lambda m: m.create_time_ms)

    def add_forward(
        self, chat_id: str, forward: HistoryMessage, held: list[HistoryMessage]
    ) -> HistoryMessage:
        """A merged forward sent in `chat_id`, holding `held` (from another chat, as they
        were). Its content is the fixed text the merge_forward doc gives
        (open.feishu.cn/document/server-docs/im-v1/message/merge_forward)."""
        forward.msg_type = "merge_forward"
        forward.content = json.dumps({"content": "Merged and Forwarded Message"})
        self.add_history(chat_id, [forward])
        for message in held:
            message.upper_message_id = forward.message_id
            message.tenant_key = self.tenant_key
        self.forwarded[forward.message_id] = list(held)
        return forward

    def recall_message(self, message_id: str) -> None:
        self.messages[message_id].deleted = True

    def _store(self, message: HistoryMessage) -> None:
        self.messages[message.message_id] = message
        self.chat_messages.setdefault(message.chat_id, []).append(message)

    def _thread_roots(self) -> dict[str, HistoryMessage]:
        """thread_id -> its first (root) message."""
        roots: dict[str, HistoryMessage] = {}
        for m in self.messages.values():
            if m.thread_id:
                root = roots.get(m.thread_id)
                if root is None or m.create_time_ms < root.create_time_ms:
                    roots[m.thread_id] = m
        return roots

    # ---- send path -------------------------------------------------------------------------

    def _resolve_receiver(self, receive_id_type: str, receive_id: str) -> Chat:
        if receive_id_type == "chat_id":
            chat = self.chats.get(receive_id)
            if chat is None:
                raise FeishuApiError(CHAT_IDS_NOT_EXIST, detail=receive_id)
            return chat
        if receive_id_type == "open_id" and not receive_id.startswith("ou_"):
            raise FeishuApiError(OPEN_IDS_NOT_EXIST, detail=receive_id)
        for chat in self.chats.values():
            if chat.chat_type == "p2p" and chat.p2p_user == receive_id:
                return chat
        chat_id = "oc_" + stable_hex(receive_id_type + receive_id, 32)
        return self.add_chat(chat_id, name="", chat_type="p2p", p2p_user=receive_id)

    async def _read_send_body(self, request: web.Request) -> tuple[JSONDict, int]:
        raw = await request.read()
        try:
            body = json.loads(raw)
        except ValueError:
            raise _field_error("body", "invalid JSON") from None
        if not isinstance(body, dict):
            raise _field_error("body", "must be an object")
        for name in ("msg_type", "content"):
            if not isinstance(body.get(name), str) or not body[name]:
                raise _field_error(name, "is required and must be a string")
        if body["msg_type"] not in MSG_TYPES:
            raise FeishuApiError(INVALID_PARAM, detail=f"invalid msg_type {body['msg_type']}")
        uuid = body.get("uuid")
        if uuid is not None and (not isinstance(uuid, str) or len(uuid) > UUID_MAX_LEN):
            raise _field_error("uuid", f"the max length is {UUID_MAX_LEN}")
        return body, len(raw)

    def _send(
        self,
        app_id: str,
        chat: Chat,
        body: JSONDict,
        raw_len: int,
        *,
        receive_id: str,
        receive_id_type: str,
        parent: HistoryMessage | None,
    ) -> web.Response:
        if not chat.bot_in_chat:
            raise FeishuApiError(BOT_NOT_IN_CHAT)
        msg_type, content = body["msg_type"], body["content"]
        limit = TEXT_LIMIT_BYTES if msg_type == "text" else RICH_LIMIT_BYTES
        if msg_type in ("text", "post", "interactive") and raw_len > limit:
            raise FeishuApiError(CONTENT_TOO_LONG)
        _check_content(msg_type, content)
        if msg_type == "interactive":
            self.check_card_reference(app_id, content)
        now = self.now()
        uuid = body.get("uuid")
        if uuid:
            seen = self._uuids.get((app_id, uuid))
            if seen and now - seen[1] < UUID_WINDOW_SECONDS:
                return web.json_response(
                    {"code": 0, "msg": "success", "data": self.messages[seen[0]].to_api()}
                )
        times = self._send_times.setdefault(chat.chat_id, deque())
        while times and now - times[0] >= 1.0:
            times.popleft()
        if self.enforce_chat_qps and len(times) >= self.chat_qps:
            raise FeishuApiError(CHAT_RATE_LIMITED, detail="chat rate limit")
        times.append(now)
        stored_content, mentions = content, []
        if msg_type == "text":
            text = json.loads(content)["text"]

            def to_key(match: re.Match[str]) -> str:
                mentions.append(Mention(match.group(1), match.group(2), tenant_key=self.tenant_key))
                return f"@_user_{len(mentions)}"

            stored_content = json.dumps({"text": _AT_TAG.sub(to_key, text)}, ensure_ascii=False)
        root_id = parent_id = thread_id = None
        if parent is not None:
            thread_id = parent.thread_id
            if thread_id is None and body.get("reply_in_thread"):
                thread_id = new_id("omt_", 6)
                parent.thread_id = thread_id
            root = self._thread_roots().get(thread_id) if thread_id else None
            if root is not None:
                root_id = parent_id = root.message_id
            else:
                root_id, parent_id = parent.root_id or parent.message_id, parent.message_id
        message = HistoryMessage(
            message_id=new_id("om_"),
            chat_id=chat.chat_id,
            content=stored_content,
            msg_type=msg_type,
            create_time_ms=int(now * 1000),
            sender_id=app_id,
            sender_id_type="app_id",
            sender_type="app",
            root_id=root_id,
            parent_id=parent_id,
            thread_id=thread_id,
            mentions=mentions,
            tenant_key=self.tenant_key,
        )
        self._store(message)
        if uuid:
            self._uuids[(app_id, uuid)] = (message.message_id, now)
        self.sent.append(
            SentMessage(
                message_id=message.message_id,
                chat_id=chat.chat_id,
                msg_type=msg_type,
                content=stored_content,
                request_content=content,
                receive_id=receive_id,
                receive_id_type=receive_id_type,
                app_id=app_id,
                uuid=uuid,
                reply_to=parent.message_id if parent else None,
                reply_in_thread=bool(body.get("reply_in_thread")),
                root_id=root_id,
                parent_id=parent_id,
                thread_id=thread_id,
                create_time_ms=message.create_time_ms,
            )
        )
        return web.json_response({"code": 0, "msg": "success", "data": message.to_api()})

    async def _create(self, request: web.Request) -> web.Response:
        app_id = self.authenticate(request)
        receive_id_type = request.query.get("receive_id_type", "")
        if receive_id_type not in _RECEIVE_ID_TYPES:
            raise _field_error("receive_id_type", f"must be one of {', '.join(_RECEIVE_ID_TYPES)}")
        body, raw_len = await self._read_send_body(request)
        receive_id = body.get("receive_id")
        if not isinstance(receive_id, str) or not receive_id:
            raise _field_error("receive_id", "is required and must be a string")
        chat = self._resolve_receiver(receive_id_type, receive_id)
        return self._send(
            app_id,
            chat,
            body,
            raw_len,
            receive_id=receive_id,
            receive_id_type=receive_id_type,
            parent=None,
        )

    async def _reply(self, request: web.Request) -> web.Response:
        app_id = self.authenticate(request)
        message_id = request.match_info["message_id"]
        body, raw_len = await self._read_send_body(request)
        if "reply_in_thread" in body and not isinstance(body["reply_in_thread"], bool):
            raise _field_error("reply_in_thread", "must be a boolean")
        parent = self.messages.get(message_id)
        if parent is None:
            raise FeishuApiError(MESSAGE_IDS_NOT_EXIST, detail=message_id)
        if parent.deleted:
            raise FeishuApiError(MESSAGE_RECALLED)
        chat = self.chats[parent.chat_id]
        return self._send(
            app_id,
            chat,
            body,
            raw_len,
            receive_id=message_id,
            receive_id_type="reply",
            parent=parent,
        )

    async def _patch(self, request: web.Request) -> web.Response:
        """Update a card the app sent ("更新应用发送的消息卡片",
        open.feishu.cn/document/uAjLw4CM/ukTMukTMukTM/reference/im-v1/message/patch): only an
        `interactive` message this app sent, not recalled, sent within 14 days, whose old and
        new card both declare `config.update_multi: true`; at most 30 KB; 5 QPS per message.
        The doc states these limits but not the code of each refusal: those without a
        documented code answer 230001 (invalid parameter) with the reason."""
        app_id = self.authenticate(request)
        message_id = request.match_info["message_id"]
        raw = await request.read()
        try:
            body = json.loads(raw)
        except ValueError:
            raise _field_error("body", "invalid JSON") from None
        content = body.get("content") if isinstance(body, dict) else None
        if not isinstance(content, str) or not content:
            raise _field_error("content", "is required and must be a string")
        message = self.messages.get(message_id)
        if message is None:
            raise FeishuApiError(MESSAGE_IDS_NOT_EXIST, detail=message_id)
        if message.deleted:
            raise FeishuApiError(MESSAGE_RECALLED)
        if message.msg_type != "interactive" or message.sender_id != app_id:
            raise FeishuApiError(INVALID_PARAM, detail="only a card this app sent can be updated")
        now = self.now()
        if now - message.create_time_ms / 1000 > PATCH_WINDOW_SECONDS:
            raise FeishuApiError(INVALID_PARAM, detail="the message is older than 14 days")
        if len(raw) > RICH_LIMIT_BYTES:
            raise FeishuApiError(CONTENT_TOO_LONG)
        _check_content("interactive", content)
        if not (_update_multi(message.content) and _update_multi(content)):
            raise FeishuApiError(INVALID_PARAM, detail="config.update_multi must be true")
        times = self._patch_times.setdefault(message_id, deque())
        while times and now - times[0] >= 1.0:
            times.popleft()
        if len(times) >= PATCH_QPS_PER_MESSAGE:
            raise FeishuApiError(CHAT_RATE_LIMITED, detail="message update rate limit")
        times.append(now)
        message.content, message.updated = content, True
        message.update_time_ms = int(now * 1000)
        self.patched.append(PatchedCard(message_id, content, app_id))
        return web.json_response({"code": 0, "msg": "success", "data": {}})

    # ---- reads -----------------------------------------------------------------------------

    async def _list_messages(self, request: web.Request) -> web.Response:
        user = self._as_user(request)
        query = request.query
        container_type = query.get("container_id_type", "")
        container_id = query.get("container_id", "")
        if container_type not in ("chat", "thread"):
            raise _field_error("container_id_type", "must be chat or thread")
        if not container_id:
            raise _field_error("container_id", "is required")
        sort_type = query.get("sort_type") or "ByCreateTimeAsc"
        if sort_type not in ("ByCreateTimeAsc", "ByCreateTimeDesc"):
            raise _field_error("sort_type", "must be ByCreateTimeAsc or ByCreateTimeDesc")
        if container_type == "chat":
            chat = self.chats.get(container_id)
            if chat is None:
                raise FeishuApiError(CHAT_IDS_NOT_EXIST, detail=container_id)
            if user is not None and not self._user_in(chat, user):
                raise FeishuApiError(USER_NOT_IN_CHAT)
            if user is None and not chat.bot_in_chat:
                raise FeishuApiError(BOT_NOT_IN_CHAT)
            start = _int_param(query, "start_time", 0, 0, 10**11)  # seconds, not ms
            end = _int_param(query, "end_time", 10**11, 0, 10**11)
            roots = self._thread_roots()
            items = [
                m
                for m in self.chat_messages[container_id]
                if start <= m.create_time_ms // 1000 <= end
                and (m.thread_id is None or roots[m.thread_id] is m)
            ]
        else:  # threads do not support a time range (the doc says so); it is ignored
            items = [m for m in self.messages.values() if m.thread_id == container_id]
        items.sort(key=lambda m: m.create_time_ms, reverse=sort_type == "ByCreateTimeDesc")
        page, meta = _paginate(items, query, 20, 50)
        data = {**meta, "items": [m.to_api() for m in page]}
        return web.json_response({"code": 0, "msg": "success", "data": data})

    async def _get_message(self, request: web.Request) -> web.Response:
        """`GET im/v1/messages/:message_id` (open.feishu.cn/document/server-docs/im-v1/message/
        get): `data.items` is the message, then a merged forward's sub-messages (each with
        `upper_message_id`). An unknown id is 230001 "invalid message_id" (the 230001 guide,
        trouble-shooting/how-to-resolve-error-230001); a chat the bot is not in, 230002; a
        recalled message comes back with `deleted` true, as the list shows it."""
        self.authenticate(request)
        message_id = request.match_info["message_id"]
        message = self.messages.get(message_id)
        if message is None:
            raise FeishuApiError(INVALID_PARAM, detail="invalid message_id")
        chat = self.chats.get(message.chat_id)
        if chat is not None and not chat.bot_in_chat:
            raise FeishuApiError(BOT_NOT_IN_CHAT)
        items = [message, *self.forwarded.get(message_id, [])]
        data = {"items": [m.to_api() for m in items]}
        return web.json_response({"code": 0, "msg": "success", "data": data})

    async def _list_chats(self, request: web.Request) -> web.Response:
        user = self._as_user(request)
        groups = [
            c
            for c in self.chats.values()
            if c.chat_type != "p2p" and (c.bot_in_chat if user is None else user in c.members)
        ]
        page, meta = _paginate(groups, request.query, 20, 100)
        items = [
            {
                "chat_id": c.chat_id,
                "avatar": "https://s1-imfile.feishucdn.com/fake_chat_avatar",
                "name": c.name,
                "description": c.description,
                "owner_id": c.owner_id,
                "owner_id_type": "open_id",
                "external": False,
                "tenant_key": self.tenant_key,
                "chat_status": "normal",
            }
            for c in page
        ]
        return web.json_response({"code": 0, "msg": "success", "data": {**meta, "items": items}})
