"""Events exactly as Feishu pushes them to a webhook ("将事件发送至开发者服务器").

Schema 2.0 envelope (`server-docs/im-v1/message/events/receive`). With an Encrypt Key the body is
`{"encrypt": base64(iv16 ‖ AES-256-CBC(PKCS#7(json)))}` with key = SHA-256(encrypt_key), and the
request carries `X-Lark-Request-Timestamp`, `X-Lark-Request-Nonce` and
`X-Lark-Signature = hex(sha256(timestamp + nonce + encrypt_key + raw_body))`.
Implemented here with pycryptodome/hashlib; the self-tests check it against lark-oapi's own code.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import time
import uuid
from datetime import datetime
from typing import Any

import aiohttp
from Crypto.Cipher import AES

from .feishu_models import JSONDict, Mention, ms, new_id, stable_hex

_BLOCK = 16


def encrypt_event(plaintext: bytes, encrypt_key: str) -> str:
    key = hashlib.sha256(encrypt_key.encode()).digest()
    iv = os.urandom(_BLOCK)
    pad = _BLOCK - len(plaintext) % _BLOCK
    cipher = AES.new(key, AES.MODE_CBC, iv)
    return base64.b64encode(iv + cipher.encrypt(plaintext + bytes([pad]) * pad)).decode()


def decrypt_event(encrypted: str, encrypt_key: str) -> bytes:
    """The inverse of `encrypt_event` (for tests that inspect what was sent)."""
    data = base64.b64decode(encrypted)
    key = hashlib.sha256(encrypt_key.encode()).digest()
    plain = AES.new(key, AES.MODE_CBC, data[:_BLOCK]).decrypt(data[_BLOCK:])
    return plain[: -plain[-1]]


def sign_event(timestamp: str, nonce: str, encrypt_key: str, raw_body: bytes) -> str:
    return hashlib.sha256((timestamp + nonce + encrypt_key).encode() + raw_body).hexdigest()


class FeishuEventSender:
    """Builds, encrypts, signs and POSTs webhook events to the app under test."""

    def __init__(
        self,
        webhook_url: str,
        *,
        app_id: str,
        encrypt_key: str | None,
        verification_token: str,
        tenant_key: str = "tenant_fake",
    ) -> None:
        self.webhook_url = webhook_url
        self.app_id = app_id
        self.encrypt_key = encrypt_key or None
        self.verification_token = verification_token
        self.tenant_key = tenant_key

    # ---- bodies ----------------------------------------------------------------------------

    def event_of_type(
        self,
        event_type: str,
        event: JSONDict,
        *,
        event_id: str | None = None,
        create_time: datetime | None = None,
    ) -> JSONDict:
        created = ms(create_time) if create_time else int(time.time() * 1000)
        return {
            "schema": "2.0",
            "header": {
                "event_id": event_id or uuid.uuid4().hex,
                "event_type": event_type,
                "create_time": str(created),
                "token": self.verification_token,
                "app_id": self.app_id,
                "tenant_key": self.tenant_key,
            },
            "event": event,
        }

    def message_event(
        self,
        *,
        text: str | None = None,
        message_id: str | None = None,
        chat_id: str = "oc_chat",
        chat_type: str = "p2p",
        sender_open_id: str = "ou_user",
        mentions: list[Mention] | None = None,
        message_type: str = "text",
        content: JSONDict | None = None,
        create_time: datetime | None = None,
        root_id: str | None = None,
        parent_id: str | None = None,
        thread_id: str | None = None,
        event_id: str | None = None,
    ) -> JSONDict:
        """`im.message.receive_v1`. For an @mention put the key in the text: "@_user_1 hi"."""
        if content is None:
            content = {"text": text or ""}
        created = str(ms(create_time) if create_time else int(time.time() * 1000))
        message: JSONDict = {"message_id": message_id or new_id("om_")}
        for key, value in (("root_id", root_id), ("parent_id", parent_id)):
            if value:
                message[key] = value
        message.update(create_time=created, update_time=created, chat_id=chat_id)
        if thread_id:
            message["thread_id"] = thread_id
        message.update(
            chat_type=chat_type,
            message_type=message_type,
            content=json.dumps(content, ensure_ascii=False),
        )
        if mentions:
            message["mentions"] = [m.event_dict(i) for i, m in enumerate(mentions)]
        event = {
            "sender": {
                "sender_id": {
                    "union_id": "on_" + stable_hex("union" + sender_open_id, 32),
                    "user_id": stable_hex("user" + sender_open_id, 8),
                    "open_id": sender_open_id,
                },
                "sender_type": "user",
                "tenant_key": self.tenant_key,
            },
            "message": message,
        }
        return self.event_of_type(
            "im.message.receive_v1", event, event_id=event_id, create_time=create_time
        )

    def card_action_event(
        self,
        *,
        value: Any,
        open_message_id: str,
        open_chat_id: str,
        operator_open_id: str = "ou_user",
        event_id: str | None = None,
        create_time: datetime | None = None,
    ) -> JSONDict:
        """`card.action.trigger` (schema 2.0), a click on a button whose behavior is a
        callback carrying `value` ("卡片回传交互", open.feishu.cn/document/uAjLw4CM/ukzMukzMukzM/
        feishu-cards/card-callback-communication). Sent to the same request URL as events, signed
        and encrypted the same way; the answer (within 3 s) may hold a toast."""
        event = {
            "operator": {
                "tenant_key": self.tenant_key,
                "user_id": stable_hex("user" + operator_open_id, 8),
                "open_id": operator_open_id,
                "union_id": "on_" + stable_hex("union" + operator_open_id, 32),
            },
            "token": "c-" + uuid.uuid4().hex,  # for a delayed update of the card
            "action": {"value": value, "tag": "button"},
            "host": "im_message",
            "context": {"open_message_id": open_message_id, "open_chat_id": open_chat_id},
        }
        return self.event_of_type(
            "card.action.trigger", event, event_id=event_id, create_time=create_time
        )

    def recalled_event(
        self,
        *,
        message_id: str,
        chat_id: str = "oc_chat",
        recall_type: str = "message_owner",
        event_id: str | None = None,
        recall_time: datetime | None = None,
    ) -> JSONDict:
        """`im.message.recalled_v1` (open.feishu.cn/document/server-docs/im-v1/message/events/
        recalled): the message recalled, its chat, when (ms, a string) and by whom
        (`message_owner`, `group_owner`, `group_manager` or `enterprise_manager`)."""
        when = str(ms(recall_time) if recall_time else int(time.time() * 1000))
        event = {
            "message_id": message_id,
            "chat_id": chat_id,
            "recall_time": when,
            "recall_type": recall_type,
        }
        return self.event_of_type(
            "im.message.recalled_v1", event, event_id=event_id, create_time=recall_time
        )

    def url_verification(self, challenge: str | None = None) -> JSONDict:
        return {
            "challenge": challenge or secrets.token_urlsafe(16),
            "token": self.verification_token,
            "type": "url_verification",
        }

    # ---- wire ------------------------------------------------------------------------------

    def encode(
        self,
        body: JSONDict,
        *,
        timestamp: int | None = None,
        nonce: str | None = None,
        forge_signature: bool = False,
    ) -> tuple[bytes, dict[str, str]]:
        """Raw body bytes and headers, as Feishu would POST them."""
        plain = json.dumps(body, ensure_ascii=False).encode()
        return self.encode_plaintext(
            plain, timestamp=timestamp, nonce=nonce, forge_signature=forge_signature
        )

    def encode_plaintext(
        self,
        plain: bytes,
        *,
        timestamp: int | None = None,
        nonce: str | None = None,
        forge_signature: bool = False,
    ) -> tuple[bytes, dict[str, str]]:
        """Like `encode`, for a body given as bytes (which need not be JSON at all): encrypted
        and signed when there is an encrypt key, as is otherwise."""
        raw = plain
        if self.encrypt_key:
            encrypted = encrypt_event(plain, self.encrypt_key)
            raw = json.dumps({"encrypt": encrypted}).encode()
        ts = str(timestamp if timestamp is not None else int(time.time()))
        nonce = nonce if nonce is not None else secrets.token_hex(8)
        headers = {
            "Content-Type": "application/json; charset=utf-8",
            "X-Lark-Request-Timestamp": ts,
            "X-Lark-Request-Nonce": nonce,
        }
        if self.encrypt_key:
            signature = sign_event(ts, nonce, self.encrypt_key, raw)
            if forge_signature:
                signature = sign_event(ts, nonce, self.encrypt_key + "-forged", raw)
            headers["X-Lark-Signature"] = signature
        return raw, headers

    async def post(
        self, body: JSONDict, *, http: aiohttp.ClientSession | None = None, **encode_kwargs: Any
    ) -> tuple[int, str]:
        return await self.post_plaintext(
            json.dumps(body, ensure_ascii=False).encode(), http=http, **encode_kwargs
        )

    async def post_plaintext(
        self, plain: bytes, *, http: aiohttp.ClientSession | None = None, **encode_kwargs: Any
    ) -> tuple[int, str]:
        """POST `plain` as the event body (encrypted and signed when there is a key)."""
        raw, headers = self.encode_plaintext(plain, **encode_kwargs)
        if http is not None:
            async with http.post(self.webhook_url, data=raw, headers=headers) as resp:
                return resp.status, await resp.text()
        async with (
            aiohttp.ClientSession() as own,
            own.post(self.webhook_url, data=raw, headers=headers) as resp,
        ):
            return resp.status, await resp.text()
