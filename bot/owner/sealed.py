"""The owner's tokens as one value, sealed into and opened from the `owner_tokens` row."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime

from bot.config import Settings, reveal
from bot.owner.crypto import Sealer, Unreadable
from bot.owner.oauth import Grant
from storage.models import OwnerToken
from storage.repos.owner_signin import OWNER

NO_KEY = "MAKA_SECRET_KEY is not set"


@dataclass(frozen=True)
class Tokens:
    open_id: str
    access_token: str
    refresh_token: str | None
    scope: str
    expires_at: float  # epoch seconds
    refresh_expires_at: float | None

    @classmethod
    def of(cls, grant: Grant, open_id: str) -> Tokens:
        return cls(
            open_id=open_id,
            access_token=grant.access_token,
            refresh_token=grant.refresh_token,
            scope=grant.scope,
            expires_at=grant.expires_at,
            refresh_expires_at=grant.refresh_expires_at,
        )

    @property
    def expires(self) -> datetime:
        return datetime.fromtimestamp(self.expires_at, UTC)

    @property
    def refresh_expires(self) -> datetime | None:
        if self.refresh_expires_at is None:
            return None
        return datetime.fromtimestamp(self.refresh_expires_at, UTC)


def sealer(settings: Settings) -> Sealer | None:
    key = reveal(settings.secret_key)
    return Sealer(key) if key else None


def seal(settings: Settings, tokens: Tokens) -> bytes:
    box = sealer(settings)
    if box is None:
        raise Unreadable(NO_KEY)
    return box.seal(asdict(tokens), context=OWNER)


def unseal(settings: Settings, row: OwnerToken) -> Tokens:
    """The row's tokens; `Unreadable` when the key is missing or is not the one that sealed
    them (the setting changed), or the value is not a sign-in."""
    box = sealer(settings)
    if box is None:
        raise Unreadable(NO_KEY)
    value = box.open(row.sealed, context=OWNER)
    try:
        return Tokens(**value)
    except TypeError as exc:
        raise Unreadable("the stored sign-in is not a sign-in") from exc
