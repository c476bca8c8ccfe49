"""Opening a webhook request the way Feishu seals it: decrypt, check the signature, the
timestamp's age and the verification token.

lark-oapi's AESCipher does the decryption; the checks are ours because the SDK compares the
signature in variable time, does not check the timestamp's age at all (so a captured request
could be replayed forever), and answers every problem with HTTP 500, which makes Feishu retry
for hours.

JSON is read with limits (`parse_json_object`): a body nested deeper than any event, a number
no float holds, or a string the database cannot store (a NUL, a lone surrogate) is Malformed
here, before anything tries to store it, and never a RecursionError.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import math
import time
from dataclasses import dataclass
from typing import Any

from sources.feishu.sdk import AESCipher
from storage.types import UNSTORABLE

MAX_TIMESTAMP_SKEW = 300  # seconds; older (or far-future) signed requests are replays
MAX_DEPTH = 64  # events nest about 6 deep; far deeper is an attack, not an event
MAX_NUMBER_LENGTH = 400  # characters of one JSON number; Feishu's have a few dozen at most


class Unauthorized(Exception):
    """HTTP 401: forged, replayed or unauthenticated."""


class Malformed(Exception):
    """HTTP 400: not a Feishu event at all."""


@dataclass(frozen=True)
class Envelope:
    body: dict[str, Any]

    @property
    def is_url_verification(self) -> bool:
        return self.body.get("type") == "url_verification"

    @property
    def event_type(self) -> str | None:
        header = self.body.get("header")
        if isinstance(header, dict):
            value = header.get("event_type")
            return value if isinstance(value, str) else None
        event = self.body.get("event")  # schema 1.0 events carry their type inside
        if isinstance(event, dict) and isinstance(event.get("type"), str):
            return str(event["type"])
        return None

    @property
    def token(self) -> str | None:
        header = self.body.get("header")
        token = header.get("token") if isinstance(header, dict) else self.body.get("token")
        return token if isinstance(token, str) else None


class EnvelopeOpener:
    def __init__(
        self,
        encrypt_key: str | None,
        verification_token: str | None,
        *,
        max_skew: int = MAX_TIMESTAMP_SKEW,
    ) -> None:
        self.encrypt_key = encrypt_key or None
        self.verification_token = verification_token or None
        self.max_skew = max_skew
        self._cipher = AESCipher(self.encrypt_key) if self.encrypt_key else None

    def open(self, raw: bytes, headers: Any, *, now: float | None = None) -> Envelope:
        outer = parse_json_object(raw)
        encrypted = outer.get("encrypt")
        if encrypted is not None:
            body = self._decrypt(encrypted)
        elif self._cipher is not None:
            raise Unauthorized("plaintext event, but an encrypt key is configured")
        else:
            body = outer
        envelope = Envelope(body)
        # URL verification carries no signature headers; its token proves who asks.
        if self._cipher is not None and not envelope.is_url_verification:
            self._check_signature(raw, headers, time.time() if now is None else now)
        self._check_token(envelope)
        return envelope

    def _decrypt(self, encrypted: Any) -> dict[str, Any]:
        if self._cipher is None:
            raise Unauthorized("encrypted event, but no MAKA_FEISHU_ENCRYPT_KEY is configured")
        if not isinstance(encrypted, str):
            raise Malformed("'encrypt' is not a string")
        try:
            plaintext = self._cipher.decrypt(base64.b64decode(encrypted, validate=True))
        except (ValueError, binascii.Error):
            raise Unauthorized("cannot decrypt: wrong key or corrupted body") from None
        return parse_json_object(plaintext)

    def _check_signature(self, raw: bytes, headers: Any, now: float) -> None:
        timestamp = headers.get("X-Lark-Request-Timestamp")
        nonce = headers.get("X-Lark-Request-Nonce")
        signature = headers.get("X-Lark-Signature")
        if not (timestamp and nonce and signature):
            raise Unauthorized("missing signature headers")
        assert self.encrypt_key is not None
        expected = hashlib.sha256(
            _bytes(timestamp) + _bytes(nonce) + self.encrypt_key.encode() + raw
        ).hexdigest()
        if not hmac.compare_digest(expected.encode(), _bytes(signature)):
            raise Unauthorized("bad signature")
        try:
            age = now - int(timestamp)
        except (ValueError, OverflowError):
            raise Unauthorized("bad timestamp") from None
        if abs(age) > self.max_skew:
            raise Unauthorized(f"timestamp is {age:.0f}s old: refused as a replay")

    def _check_token(self, envelope: Envelope) -> None:
        if self.verification_token is None:
            return
        token = envelope.token
        if token is None or not hmac.compare_digest(
            _bytes(token), self.verification_token.encode()
        ):
            raise Unauthorized("bad verification token")


def _bytes(value: str) -> bytes:
    # Headers arrive as str; a non-UTF-8 byte comes back as a surrogate, not an exception.
    return value.encode("utf-8", "surrogateescape")


def parse_json_object(raw: bytes | str) -> dict[str, Any]:
    """A JSON object that can be stored as it is; Malformed otherwise."""
    try:
        value = json.loads(raw, parse_int=_int, parse_float=_float, parse_constant=_refuse_constant)
    except RecursionError:
        raise Malformed(f"body is nested deeper than {MAX_DEPTH}") from None
    except (ValueError, UnicodeDecodeError):
        raise Malformed("body is not JSON") from None
    if not isinstance(value, dict):
        raise Malformed("body is not a JSON object")
    _check_storable(value)
    return value


def _check_storable(value: dict[str, Any]) -> None:
    """Depth and strings, walked without recursion (the nesting is the attacker's choice)."""
    todo: list[tuple[Any, int]] = [(value, 1)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, str):
            if UNSTORABLE.search(item):
                raise Malformed("body holds a NUL or a lone surrogate")
            continue
        if not isinstance(item, dict | list):
            continue
        if depth > MAX_DEPTH:
            raise Malformed(f"body is nested deeper than {MAX_DEPTH}")
        if isinstance(item, dict):
            todo.extend((key, depth) for key in item)
            item = item.values()
        todo.extend((child, depth + 1) for child in item)


def _int(text: str) -> int:
    if len(text) > MAX_NUMBER_LENGTH:
        raise Malformed(f"a number of {len(text)} digits")
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if len(text) > MAX_NUMBER_LENGTH or not math.isfinite(value):
        raise Malformed(f"a number out of range: {text[:40]}")
    return value


def _refuse_constant(name: str) -> Any:
    raise Malformed(f"{name} is not a JSON number")
