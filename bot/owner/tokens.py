"""The owner's token for the code that acts or reads as the owner (issue #41's contract).

    token = await owner_user_token(services)   # SignInNeeded: "sign in again: ..."

Executors turn `SignInNeeded` into a permanent failure ("sign in again: ..."); the transient
`TokenUnavailable` (the token expired and Feishu cannot refresh it just now) is retried like
any other error.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.config import Settings
from bot.owner.crypto import Unreadable
from bot.owner.refresh import RefreshBusy, Refresher, SignInNeeded, TokenUnavailable, opened
from bot.owner.sealed import unseal
from bot.services import Services
from storage.db import Database
from storage.repos import owner_signin
from storage.types import utcnow

REFRESH_WITHIN = timedelta(minutes=5)  # a caller's token is refreshed this close to expiry
WAIT_FOR_OTHER = 10.0  # seconds a caller waits for another replica's refresh of an expired one

__all__ = [
    "OwnerTokens",
    "SignInNeeded",
    "SignInState",
    "TokenUnavailable",
    "owner_user_token",
    "read_sign_in_state",
    "refresher",
    "sign_in_state",
]


def refresher(services: Services) -> Refresher:
    return Refresher(services.settings, services.db, services.host.instance_id)


async def owner_user_token(services: Services) -> str:
    """The owner's current user_access_token, refreshed first when it expires within
    5 minutes. SignInNeeded: none, red (revoked, refused), or unreadable (the key changed)."""
    return await OwnerTokens(services.settings, services.db, services.host.instance_id).get()


@dataclass(frozen=True)
class OwnerTokens:
    """`owner_user_token` for code that has no Services (a source adapter, `maka sync`):
    `OwnerTokens(settings, db, instance_id).get` is the token provider an owner source is
    given (sources never import bot)."""

    settings: Settings
    db: Database
    instance_id: str

    async def get(self) -> str:
        return await _owner_user_token(self.settings, self.db, self.instance_id)


async def _owner_user_token(settings: Settings, db: Database, instance_id: str) -> str:
    async with db.read() as tx:
        row = await owner_signin.token(tx)
    tokens = opened(settings, row)
    assert row is not None
    if row.access_expires_at - utcnow() > REFRESH_WITHIN:
        return tokens.access_token
    deadline = asyncio.get_running_loop().time() + WAIT_FOR_OTHER
    refreshing = Refresher(settings, db, instance_id)
    while True:
        try:
            return (await refreshing.refresh(within=REFRESH_WITHIN)).access_token
        except TokenUnavailable as exc:
            if tokens.expires > utcnow():
                return tokens.access_token  # still good for a few minutes: use it
            if not isinstance(exc, RefreshBusy) or asyncio.get_running_loop().time() >= deadline:
                raise
            await asyncio.sleep(0.2)  # another replica is storing a fresh one: read it then
        async with db.read() as tx:
            row = await owner_signin.token(tx)
        tokens = opened(settings, row)


@dataclass(frozen=True)
class SignInState:
    """For /status, the status page and `maka doctor`: never a token."""

    signed_in: bool
    red: bool = False  # it was signed in, and is no more: "sign in again"
    expires_at: datetime | None = None
    refresh_expires_at: datetime | None = None
    last_error: str | None = None
    scope: str = ""

    def line(self) -> str:
        if not self.signed_in:
            return f"owner sign-in: not signed in ({self.last_error or 'the owner sends /signin'})"
        parts = [f"owner sign-in: signed in, token expires {self.expires_at:%Y-%m-%d %H:%M} UTC"]
        if self.refresh_expires_at is not None:
            parts.append(f"sign-in lasts until {self.refresh_expires_at:%Y-%m-%d %H:%M} UTC")
        if self.last_error:
            parts.append(f"last error: {self.last_error}")
        return "; ".join(parts)


async def sign_in_state(services: Services) -> SignInState:
    return await read_sign_in_state(services.settings, services.db)


async def read_sign_in_state(settings: Settings, db: Database) -> SignInState:
    """`sign_in_state` without a running service (`maka doctor`)."""
    async with db.read() as tx:
        row = await owner_signin.token(tx)
    if row is None:
        return SignInState(signed_in=False)
    if row.state == owner_signin.RED:
        return SignInState(signed_in=False, red=True, last_error=row.last_error)
    try:
        tokens = unseal(settings, row)
    except Unreadable as exc:
        return SignInState(signed_in=False, red=True, last_error=f"sign in again: {exc}")
    return SignInState(
        signed_in=True,
        expires_at=row.access_expires_at,
        refresh_expires_at=row.refresh_expires_at,
        last_error=row.last_error,
        scope=tokens.scope,
    )
