"""Feishu's OAuth for a user_access_token: the authorization link, the code exchange, the
refresh, and who the token belongs to.

- Authorize (a page the owner opens): GET https://accounts.feishu.cn/open-apis/authen/v1/authorize
  ?client_id&response_type=code&redirect_uri&scope&state; the code it gives lives 5 minutes
  and is single use. https://open.feishu.cn/document/common-capabilities/sso/api/obtain-oauth-code
- Token: POST /open-apis/authen/v2/oauth/token, JSON, `grant_type` authorization_code (with
  code, redirect_uri) or refresh_token; answers at the top level `{code: 0, access_token,
  expires_in, refresh_token, refresh_token_expires_in, scope}`; a refresh token is single use
  and the new one replaces it at once (refresh tokens need the offline_access scope).
  https://open.feishu.cn/document/authentication-management/access-token/get-user-access-token
  https://open.feishu.cn/document/authentication-management/access-token/refresh-user-access-token
  Errors are `{code, error, error_description}` with RFC 6749 `error` names: `invalid_grant`
  (a code or refresh token expired, used, revoked: sign in again), `invalid_client`,
  `invalid_request`; `server_error` (e.g. 20050) and HTTP 5xx are transient.
- Who: GET /open-apis/authen/v1/user_info with the user token -> `data.open_id`.
  https://open.feishu.cn/document/server-docs/authentication-management/login-state-management/get
"""

from __future__ import annotations

import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

import aiohttp

from bot.config import Settings, reveal
from bot.host.backoff import one_line

TIMEOUT = aiohttp.ClientTimeout(total=15.0)
TRANSIENT_ERRORS = frozenset({"server_error", "temporarily_unavailable"})
# Feishu's accounts host, where the authorization page lives, for each Open API host; any
# other domain (a private deployment, the tests' loopback stand-in) serves both.
ACCOUNTS_HOSTS = {
    "https://open.feishu.cn": "https://accounts.feishu.cn",
    "https://open.larksuite.com": "https://accounts.larksuite.com",
}


class OAuthRefused(Exception):
    """Feishu said no for good (the grant is invalid, expired, used or revoked; the app's
    credentials are wrong): trying again will not help, the owner must sign in again."""

    def __init__(self, code: int | None, error: str, description: str) -> None:
        super().__init__(one_line(f"{error} (code {code}): {description}", 200))
        self.code, self.error = code, error


class OAuthUnavailable(Exception):
    """No usable answer (network, timeout, 5xx, server_error): try again later."""


@dataclass(frozen=True)
class Grant:
    access_token: str
    refresh_token: str | None
    expires_at: float  # epoch seconds
    refresh_expires_at: float | None
    scope: str


def authorize_url(*, domain: str, app_id: str, redirect_uri: str, scope: str, state: str) -> str:
    accounts = ACCOUNTS_HOSTS.get(domain.rstrip("/"), domain.rstrip("/"))
    query = urllib.parse.urlencode(
        {
            "client_id": app_id,
            "response_type": "code",
            "redirect_uri": redirect_uri,
            "scope": scope,
            "state": state,
        },
        quote_via=urllib.parse.quote,
    )
    return f"{accounts}/open-apis/authen/v1/authorize?{query}"


def client_for(settings: Settings) -> FeishuOAuth | None:
    """The OAuth client of the configured Feishu app; None without one."""
    secret = reveal(settings.feishu_app_secret)
    if not settings.feishu_app_id or not secret:
        return None
    return FeishuOAuth(
        domain=settings.feishu_domain, app_id=settings.feishu_app_id, app_secret=secret
    )


class FeishuOAuth:
    def __init__(self, *, domain: str, app_id: str, app_secret: str) -> None:
        self.domain = domain.rstrip("/")
        self.app_id, self.app_secret = app_id, app_secret

    async def exchange(self, code: str, redirect_uri: str) -> Grant:
        return await self._token(
            {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri}
        )

    async def refresh(self, refresh_token: str) -> Grant:
        return await self._token({"grant_type": "refresh_token", "refresh_token": refresh_token})

    async def open_id(self, access_token: str) -> str:
        body = await self._call(
            "GET",
            "/open-apis/authen/v1/user_info",
            headers={"Authorization": f"Bearer {access_token}"},
        )
        data = body.get("data") or {}
        open_id = data.get("open_id") if isinstance(data, dict) else None
        if not isinstance(open_id, str) or not open_id:
            raise OAuthUnavailable("user_info answered without an open_id")
        return open_id

    async def _token(self, grant: dict[str, str]) -> Grant:
        payload = {"client_id": self.app_id, "client_secret": self.app_secret, **grant}
        body = await self._call("POST", "/open-apis/authen/v2/oauth/token", json=payload)
        token, expires_in = body.get("access_token"), body.get("expires_in")
        if not isinstance(token, str) or not isinstance(expires_in, int | float):
            raise OAuthUnavailable("the token endpoint answered without a token")
        now = time.time()
        refresh = body.get("refresh_token")
        refresh_in = body.get("refresh_token_expires_in")
        return Grant(
            access_token=token,
            refresh_token=refresh if isinstance(refresh, str) and refresh else None,
            expires_at=now + float(expires_in),
            refresh_expires_at=now + float(refresh_in)
            if isinstance(refresh_in, int | float)
            else None,
            scope=str(body.get("scope") or ""),
        )

    async def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            async with (
                aiohttp.ClientSession(timeout=TIMEOUT) as http,
                http.request(method, self.domain + path, **kwargs) as response,
            ):
                status = response.status
                try:
                    body = await response.json(content_type=None)
                except ValueError:
                    body = None
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise OAuthUnavailable(f"{path}: {type(exc).__name__}: {exc}") from exc
        if not isinstance(body, dict):
            raise OAuthUnavailable(f"{path}: HTTP {status}, not a JSON answer")
        code = body.get("code")
        if status < 300 and code == 0:
            return body
        error = str(body.get("error") or "")
        description = str(body.get("error_description") or body.get("msg") or "")
        if status >= 500 or status == 429 or error in TRANSIENT_ERRORS:
            raise OAuthUnavailable(one_line(f"{path}: HTTP {status} {error} {description}", 200))
        raise OAuthRefused(code if isinstance(code, int) else None, error or "refused", description)
