"""Who may use the admin pages (the console and the status page): same-origin requests only,
the right Host, and the admin token when one is set.

A web page the owner opens elsewhere must never drive the assistant: a cross-site "simple"
POST (text/plain, form) is refused before it is read, as is any request whose Origin or
Sec-Fetch-Site says it came from another site. On a loopback address the Host header must
name loopback too (a DNS-rebinding page arrives with its own host name). Off loopback the
console runs only with MAKA_ADMIN_TOKEN (bot/config.py refuses to start otherwise) and the
status page refuses every request without it; every call carries it, as a bearer token or
the cookie the login sets.
"""

from __future__ import annotations

import hashlib
import hmac

from aiohttp import web

from bot.config import Settings, is_loopback, reveal

COOKIE = "maka_admin"


def cookie_value(token: str) -> str:
    """The cookie proves the token was given, without carrying the token itself."""
    return hashlib.sha256(f"maka-admin:{token}".encode()).hexdigest()


class AdminGuard:
    def __init__(self, settings: Settings) -> None:
        self._token = reveal(settings.admin_token) or reveal(settings.console_token)
        self._loopback_only = is_loopback(settings.http_host)

    @property
    def open_to_anyone(self) -> bool:
        """Off loopback with no token: the status page must refuse everyone."""
        return self._token is None and not self._loopback_only

    @property
    def needs_login(self) -> bool:
        return self._token is not None

    def check_host(self, request: web.Request) -> None:
        if self._loopback_only and not is_loopback(_hostname(request.host)):
            raise web.HTTPForbidden(text="the console answers only on its loopback address")

    def check_same_origin(self, request: web.Request) -> None:
        site = request.headers.get("Sec-Fetch-Site")
        if site is not None and site not in ("same-origin", "none"):
            raise web.HTTPForbidden(text="cross-site requests are refused")
        origin = request.headers.get("Origin")
        if origin is not None and origin != f"{request.scheme}://{request.host}":
            raise web.HTTPForbidden(text="cross-site requests are refused")

    def check_json(self, request: web.Request) -> None:
        """Only a script on the same origin can send application/json without a CORS
        preflight, which this server never grants."""
        if request.content_type != "application/json":
            raise web.HTTPUnsupportedMediaType(text="send application/json")

    def check_login(self, request: web.Request) -> None:
        if self._token is None:
            return
        bearer = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if bearer and hmac.compare_digest(bearer.encode(), self._token.encode()):
            return
        cookie = request.cookies.get(COOKIE, "")
        if cookie and hmac.compare_digest(cookie.encode(), cookie_value(self._token).encode()):
            return
        raise web.HTTPUnauthorized(text="log in with the admin token (MAKA_ADMIN_TOKEN)")

    def token_matches(self, given: str) -> bool:
        return self._token is not None and hmac.compare_digest(given.encode(), self._token.encode())

    def login_cookie(self) -> str:
        assert self._token is not None
        return cookie_value(self._token)


def _hostname(host: str) -> str:
    """`127.0.0.1:8080` → `127.0.0.1`, `[::1]:8080` → `::1`."""
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host
