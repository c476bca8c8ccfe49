"""Who may use the admin pages (the console and the status page): same-origin requests only,
the right Host, and the admin token when one is set.

A web page the owner opens elsewhere must never drive the assistant: a cross-site "simple"
POST (text/plain, form) is refused before it is read, as is any request whose Origin or
Sec-Fetch-Site says it came from another site. On a loopback address the Host header must
name loopback too (a DNS-rebinding page arrives with its own host name). Off loopback the
console runs only with MAKA_ADMIN_TOKEN (bot/config.py refuses to start otherwise) and the
status page refuses every request without it; every call carries it, as a bearer token or
the cookie the login sets. Wrong tokens are limited per client and overall (login_limits.py).

Behind a TLS-terminating proxy the browser's origin and address are read as origin.py says
(MAKA_PUBLIC_URL, X-Forwarded-* from MAKA_TRUSTED_PROXIES only), and the login cookie is
Secure when the browser reached us over https.
"""

from __future__ import annotations

import hashlib
import hmac

from aiohttp import web

from bot.config import Settings, is_loopback, reveal
from bot.web.login_limits import LOGIN_LIMITS
from bot.web.origin import Origins, loopback_host

COOKIE = "maka_admin"


def cookie_value(token: str) -> str:
    """The cookie proves the token was given, without carrying the token itself."""
    return hashlib.sha256(f"maka-admin:{token}".encode()).hexdigest()


class AdminGuard:
    def __init__(self, settings: Settings) -> None:
        self._token = reveal(settings.admin_token) or reveal(settings.console_token)
        self._loopback_only = is_loopback(settings.http_host)
        self.origins = Origins(settings)

    @property
    def open_to_anyone(self) -> bool:
        """Off loopback with no token: the status page must refuse everyone."""
        return self._token is None and not self._loopback_only

    @property
    def needs_login(self) -> bool:
        return self._token is not None

    def check_host(self, request: web.Request) -> None:
        """On loopback, a Host that is not loopback is a DNS-rebinding page, unless it is the
        public address or the request came through a trusted proxy."""
        if not self._loopback_only or loopback_host(request.host):
            return
        if self.origins.is_public_host(request.host):
            return
        if self.origins.seen(request).via_trusted_proxy:
            return
        raise web.HTTPForbidden(text="the console answers only on its loopback address")

    def check_same_origin(self, request: web.Request) -> None:
        site = request.headers.get("Sec-Fetch-Site")
        if site is not None and site not in ("same-origin", "none"):
            raise web.HTTPForbidden(text="cross-site requests are refused")
        origin = request.headers.get("Origin")
        allowed = self.origins.allowed_origins(self.origins.seen(request))
        if origin is not None and origin not in allowed:
            raise web.HTTPForbidden(text="cross-site requests are refused")

    def check_json(self, request: web.Request) -> None:
        """Only a script on the same origin can send application/json without a CORS
        preflight, which this server never grants."""
        if request.content_type != "application/json":
            raise web.HTTPUnsupportedMediaType(text="send application/json")

    def check_login(self, request: web.Request) -> None:
        if self._token is None:
            return
        cookie = request.cookies.get(COOKIE, "")
        if cookie and hmac.compare_digest(_bytes(cookie), cookie_value(self._token).encode()):
            return
        bearer = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if bearer and self.token_matches(request, bearer):
            return
        raise web.HTTPUnauthorized(text="log in with the admin token (MAKA_ADMIN_TOKEN)")

    def token_matches(self, request: web.Request, given: str) -> bool:
        """Whether `given` is the admin token, compared in constant time; HTTP 429 instead
        while this client (or everyone) has tried too many wrong ones."""
        if self._token is None or not given:
            return False  # an empty form is no guess
        limits = request.app[LOGIN_LIMITS]
        client = self.origins.seen(request).client
        limits.refuse_if_waiting(client)
        if hmac.compare_digest(_bytes(given), self._token.encode()):
            limits.succeeded(client)
            return True
        limits.failed(client)
        return False

    def login_cookie(self) -> str:
        assert self._token is not None
        return cookie_value(self._token)

    def set_login_cookie(
        self, request: web.Request, response: web.StreamResponse, path: str
    ) -> None:
        """The cookie that proves the login: script cannot read it, other sites cannot send
        it, and over https (MAKA_PUBLIC_URL or a trusted proxy says so) it never leaves TLS."""
        response.set_cookie(
            COOKIE,
            self.login_cookie(),
            path=path,
            httponly=True,
            samesite="Strict",
            secure=self.origins.is_secure(request),
        )


def _bytes(value: str) -> bytes:
    # A header, cookie or form may carry what is no UTF-8 (aiohttp keeps such bytes as lone
    # surrogates): compared as they came, never a UnicodeEncodeError.
    return value.encode("utf-8", "surrogatepass")
