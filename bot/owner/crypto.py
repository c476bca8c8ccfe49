"""Sealing the owner's tokens at rest: AES-GCM under a key derived (HKDF-SHA256) from
MAKA_SECRET_KEY. A ciphertext that does not open (the setting changed, or the row was altered)
is `Unreadable`, which callers turn into "sign in again", never a crash."""

from __future__ import annotations

import json
import os
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

_INFO = b"maka owner tokens v1"  # binds the derived key to this one use of the setting
_NONCE = 12


class Unreadable(Exception):
    """The sealed value does not open with this key."""


class Sealer:
    def __init__(self, secret_key: str) -> None:
        hkdf = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO)
        self._aead = AESGCM(hkdf.derive(secret_key.encode()))

    def seal(self, value: dict[str, Any], *, context: str) -> bytes:
        """`context` (the row's name) is authenticated too: a sealed value moved to another
        row does not open there."""
        nonce = os.urandom(_NONCE)
        plain = json.dumps(value, separators=(",", ":")).encode()
        return nonce + self._aead.encrypt(nonce, plain, context.encode())

    def open(self, sealed: bytes, *, context: str) -> dict[str, Any]:
        try:
            plain = self._aead.decrypt(sealed[:_NONCE], sealed[_NONCE:], context.encode())
            value = json.loads(plain)
        except (InvalidTag, ValueError) as exc:
            raise Unreadable("the stored sign-in does not open with MAKA_SECRET_KEY") from exc
        if not isinstance(value, dict):
            raise Unreadable("the stored sign-in is not a sign-in")
        return value
