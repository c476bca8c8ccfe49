"""Refreshing the owner's token, one refresh at a time across replicas.

Feishu's refresh tokens are single use: the refresh that succeeds invalidates the token it
used, so two replicas refreshing at once would have the second refused and the sign-in
wrongly turned red. A refresh therefore holds a named lease (`storage.repos.leases`; in this
process, a lock as well), re-reads the row under it, and stores the rotated tokens over the
version it read, in the transaction that checks the lease is still held.

A refusal (invalid_grant: expired, revoked, used) turns the sign-in red: "sign in again", and
nothing more is tried until the owner signs in. A transient failure (network, 5xx) is backed
off (bot/host/backoff.py) through the row's `retry_at`, so neither the worker nor a caller
retries it in a hot loop. A process killed between Feishu's answer and the commit loses the
rotated token: the next refresh is refused and the owner is asked to sign in again.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.config import Settings
from bot.host.backoff import backoff, one_line
from bot.owner.crypto import Unreadable
from bot.owner.oauth import FeishuOAuth, OAuthRefused, OAuthUnavailable, client_for
from bot.owner.sealed import Tokens, seal, unseal
from storage.db import Database
from storage.models import OwnerToken
from storage.repos import leases, owner_signin
from storage.types import utcnow

log = logging.getLogger(__name__)

LEASE = "owner-token-refresh"
LEASE_TTL = timedelta(seconds=60)  # a refresh is one HTTP call of at most 15 s
RETRY_FIRST, RETRY_MOST = 30.0, 900.0  # seconds: a transient failure's backoff
SIGN_IN_AGAIN = "sign in again"

_locks: dict[str, asyncio.Lock] = {}  # by Host instance id: one refresh at a time in it


class SignInNeeded(Exception):
    """str(exc) is one line for the user: "sign in again: ..."."""


class TokenUnavailable(Exception):
    """The token expired and cannot be refreshed just now (Feishu unreachable, backed off,
    or another replica is refreshing it): a transient failure, to be retried."""


class RefreshBusy(TokenUnavailable):
    """Another refresh (or a sign-in) holds or changed the row: a fresh token is coming."""


@dataclass(frozen=True)
class Refresher:
    settings: Settings
    db: Database
    holder: str  # this process's Host instance id (the lease's owner)

    def oauth(self) -> FeishuOAuth:
        client = client_for(self.settings)
        if client is None:
            raise SignInNeeded(f"{SIGN_IN_AGAIN}: no Feishu app is configured")
        return client

    async def refresh(self, *, within: timedelta, honour_backoff: bool = True) -> Tokens:
        """The tokens, refreshed first when the access token expires within `within`."""
        lock = _locks.setdefault(self.holder, asyncio.Lock())
        async with lock:
            async with self.db.write() as tx:
                held = await leases.acquire(tx, LEASE, self.holder, LEASE_TTL, utcnow())
            if not held:
                raise RefreshBusy("another replica is refreshing the owner's token")
            try:
                return await self._refresh_held(within, honour_backoff)
            finally:
                async with self.db.write() as tx:
                    await leases.release(tx, LEASE, self.holder)

    async def _refresh_held(self, within: timedelta, honour_backoff: bool) -> Tokens:
        async with self.db.read() as tx:
            row = await owner_signin.token(tx)
        tokens = opened(self.settings, row)
        assert row is not None
        now = utcnow()
        if row.access_expires_at - now > within:
            return tokens  # another refresh came first
        if honour_backoff and row.retry_at is not None and row.retry_at > now:
            raise TokenUnavailable(f"refresh backed off until {row.retry_at:%H:%M:%S} UTC")
        if tokens.refresh_token is None:
            raise await self._red(row, "no refresh token (the offline_access scope)", now)
        refresh_expires = tokens.refresh_expires
        if refresh_expires is not None and refresh_expires <= now:
            raise await self._red(row, "the sign-in expired", now)
        try:
            grant = await self.oauth().refresh(tokens.refresh_token)
        except OAuthRefused as exc:
            raise await self._red(row, f"Feishu refused the refresh ({exc})", utcnow()) from exc
        except OAuthUnavailable as exc:
            await self._back_off(row, str(exc))
            raise TokenUnavailable(f"Feishu could not refresh the token: {exc}") from exc
        fresh = Tokens.of(grant, tokens.open_id)
        async with self.db.write() as tx:
            now = utcnow()
            # Still ours? Then no other refresh can have used the token: store it with the
            # check, in one transaction.
            if not await leases.renew(tx, LEASE, self.holder, LEASE_TTL, now):
                raise TokenUnavailable("the refresh lease lapsed; the refresh is not stored")
            stored = await owner_signin.refreshed(
                tx,
                row.version,
                seal(self.settings, fresh),
                access_expires_at=fresh.expires,
                refresh_expires_at=fresh.refresh_expires,
                now=now,
            )
        if not stored:  # a sign-in or sign-out came meanwhile: theirs stands
            raise RefreshBusy("the sign-in changed during the refresh")
        log.info("owner token refreshed; it expires at %s", fresh.expires.isoformat())
        return fresh

    async def _red(self, row: OwnerToken, why: str, now: datetime) -> SignInNeeded:
        line = one_line(f"{SIGN_IN_AGAIN}: {why}", 300)
        async with self.db.write() as tx:
            await owner_signin.mark_red(tx, row.version, line, now)
        log.warning("owner sign-in is red: %s", line)
        return SignInNeeded(line)

    async def _back_off(self, row: OwnerToken, error: str) -> None:
        wait = backoff(row.failures + 1, first=RETRY_FIRST, most=RETRY_MOST)
        now = utcnow()
        async with self.db.write() as tx:
            await owner_signin.record_failure(
                tx,
                row.version,
                one_line(error, 300),
                retry_at=now + timedelta(seconds=wait),
                now=now,
            )
        log.info("owner token refresh failed, tried again in %.0f s: %s", wait, error)


def opened(settings: Settings, row: OwnerToken | None) -> Tokens:
    """The row's tokens, or SignInNeeded saying why there are none to use."""
    if row is None:
        raise SignInNeeded(f"{SIGN_IN_AGAIN}: the owner is not signed in (send /signin)")
    if row.state == owner_signin.RED:
        raise SignInNeeded(row.last_error or SIGN_IN_AGAIN)
    try:
        return unseal(settings, row)
    except Unreadable as exc:
        raise SignInNeeded(f"{SIGN_IN_AGAIN}: {exc}") from exc
