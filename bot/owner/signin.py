"""The sign-in flow: `/signin` makes a single-use `state` bound to the owner and answers the
Feishu authorization link; Feishu sends the owner's browser back to the callback with a code
and that state; the code is exchanged for tokens, which are kept only if they are the owner's.

The state is random (256 bits), stored only as its SHA-256, valid for 10 minutes and used at
most once (a conditional update), so a replayed, expired, unknown or forged callback stores
nothing. The tokens' owner is asked of Feishu (user_info): a code for anyone else, even with
a good state, stores nothing.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from dataclasses import dataclass
from datetime import timedelta

from bot.config import Settings, reveal
from bot.host.notify import Notifier
from bot.owner.oauth import OAuthRefused, OAuthUnavailable, authorize_url, client_for
from bot.owner.sealed import Tokens, seal
from storage.db import Database
from storage.repos import owner_signin
from storage.types import utcnow

log = logging.getLogger(__name__)

CALLBACK_PATH = "/feishu/oauth/callback"
STATE_TTL = timedelta(minutes=10)


@dataclass(frozen=True)
class Outcome:
    ok: bool
    page: str  # the one line the callback's page says (never a code or a token)


def refusal(settings: Settings) -> str | None:
    """Why sign-in cannot work with these settings, in one line; None when it can."""
    missing = [
        name
        for name, present in (
            ("MAKA_FEISHU_APP_ID and MAKA_FEISHU_APP_SECRET", settings.feishu_configured),
            ("MAKA_PUBLIC_URL (where Feishu sends the browser back)", bool(settings.public_url)),
            ("MAKA_SECRET_KEY (seals the tokens at rest)", bool(reveal(settings.secret_key))),
            ("MAKA_OWNER", bool(settings.owner)),
        )
        if not present
    ]
    if not missing:
        return None
    return "sign-in is off: set " + " and ".join(missing)


def redirect_uri(settings: Settings) -> str:
    assert settings.public_url
    return settings.public_url + CALLBACK_PATH


def _hash(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()


async def start(settings: Settings, db: Database, open_id: str) -> str:
    """A fresh authorization link for `open_id` (the owner); its state is stored hashed."""
    assert settings.feishu_app_id
    state = secrets.token_urlsafe(32)
    now = utcnow()
    async with db.write() as tx:
        await owner_signin.add_state(tx, _hash(state), open_id, now=now, expires_at=now + STATE_TTL)
    return authorize_url(
        domain=settings.feishu_domain,
        app_id=settings.feishu_app_id,
        redirect_uri=redirect_uri(settings),
        scope=settings.feishu_oauth_scopes,
        state=state,
    )


async def complete(
    settings: Settings, db: Database, notifier: Notifier, *, code: str, state: str
) -> Outcome:
    """The callback: the state used once, the code exchanged, the tokens kept if the owner's."""
    off = refusal(settings)
    if off is not None:
        return Outcome(False, off)
    if not code or not state:
        return Outcome(False, "This is not a complete sign-in answer. Send /signin again.")
    async with db.write() as tx:
        bound = await owner_signin.take_state(tx, _hash(state), utcnow())
    if bound is None:
        log.warning("owner sign-in refused: a used, expired or unknown state")
        return Outcome(
            False, "This sign-in link was already used or has expired. Send /signin again."
        )
    if bound != settings.owner:
        log.warning("owner sign-in refused: the state was issued to %s, not the owner", bound)
        return Outcome(False, "This sign-in link is not the owner's. Nothing was stored.")
    oauth = client_for(settings)
    assert oauth is not None  # (refusal() checked the app is configured)
    try:
        grant = await oauth.exchange(code, redirect_uri(settings))
        who = await oauth.open_id(grant.access_token)
    except OAuthRefused as exc:
        log.warning("owner sign-in refused by Feishu: %s", exc)
        return Outcome(False, "Feishu refused this sign-in. Send /signin again.")
    except OAuthUnavailable as exc:
        log.warning("owner sign-in: Feishu could not be reached: %s", exc)
        return Outcome(False, "Feishu could not be reached. Send /signin again in a minute.")
    if who != bound:
        log.warning("owner sign-in refused: the code is %s's, not the owner's", who)
        return Outcome(
            False, "This sign-in is another person's, not the owner's. Nothing was stored."
        )
    tokens = Tokens.of(grant, who)
    async with db.write() as tx:
        await owner_signin.put(
            tx,
            seal(settings, tokens),
            access_expires_at=tokens.expires,
            refresh_expires_at=tokens.refresh_expires,
            now=utcnow(),
        )
        await notifier.publish(tx, owner_signin.SIGNIN_TOPIC)
    notifier.wake_local(owner_signin.SIGNIN_TOPIC)
    log.info("owner signed in; scopes: %s", tokens.scope or "(none named)")
    return Outcome(True, "Signed in. You can close this page.")


async def sign_out(db: Database) -> bool:
    async with db.write() as tx:
        return await owner_signin.remove(tx)
