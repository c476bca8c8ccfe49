"""The user sign-in of the Feishu fake: OAuth authorization code, token and user info, as
Feishu documents them.

- GET  /open-apis/authen/v1/authorize?client_id&response_type=code&redirect_uri&scope&state
  The page where the user approves; here the test's "user" (`approving_user`) approves at
  once, and the answer redirects (302) to redirect_uri with `code` and `state`. The code
  lives 5 minutes and is single use.
  https://open.feishu.cn/document/common-capabilities/sso/api/obtain-oauth-code
- POST /open-apis/authen/v2/oauth/token  {grant_type, client_id, client_secret, code,
  redirect_uri | refresh_token}: `{code: 0, access_token, expires_in, refresh_token,
  refresh_token_expires_in, scope, token_type}` at the top level; a refresh_token only with
  the offline_access scope; a refresh token is single use, the new one replacing it at once.
  Errors: HTTP 400 `{code, error, error_description}` (RFC 6749 error names).
  https://open.feishu.cn/document/authentication-management/access-token/get-user-access-token
  https://open.feishu.cn/document/authentication-management/access-token/refresh-user-access-token
- GET  /open-apis/authen/v1/user_info (Bearer user_access_token): `data.open_id` and name.
  https://open.feishu.cn/document/server-docs/authentication-management/login-state-management/get

The error codes are those the token docs list: 20002 invalid client secret, 20003 code not
found, 20004 code expired, 20026 refresh token invalid, 20037 refresh token expired, 20064
refresh token revoked, 20065 code already used, 20071 redirect_uri mismatch, 20073 refresh
token already used. The fake's clock (`now`, `advance`) decides every expiry.
"""

from __future__ import annotations

import json
import secrets
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

CODE_TTL = 300  # "授权码的有效期为 5 分钟，且只能被使用一次"
USER_TOKEN_TTL = 7200  # "user_access_token 的最大有效期是 2 小时左右"
REFRESH_TOKEN_TTL = 604800  # the docs' example refresh_token_expires_in

INVALID_CLIENT = (20002, "invalid_client", "The client secret is invalid.")
CODE_NOT_FOUND = (20003, "invalid_grant", "The authorization code is not found.")
CODE_EXPIRED = (20004, "invalid_grant", "The authorization code has expired.")
REFRESH_INVALID = (20026, "invalid_grant", "The refresh token is invalid.")
REFRESH_EXPIRED = (20037, "invalid_grant", "The refresh token has expired.")
REFRESH_REVOKED = (20064, "invalid_grant", "The refresh token has been revoked.")
CODE_USED = (20065, "invalid_grant", "The authorization code has been used.")
REDIRECT_MISMATCH = (20071, "invalid_grant", "The redirect_uri does not match.")
REFRESH_USED = (20073, "invalid_grant", "The refresh token has been used.")
BAD_REQUEST = (20001, "invalid_request", "A required parameter is missing or invalid.")
UNSUPPORTED_GRANT = (20001, "unsupported_grant_type", "The grant_type is not supported.")


class _OAuthError(Exception):
    def __init__(self, err: tuple[int, str, str]) -> None:
        super().__init__(err[2])
        self.err = err


@dataclass
class IssuedCode:
    code: str
    app_id: str
    open_id: str
    redirect_uri: str
    scope: str
    issued_at: float
    used: bool = False


@dataclass
class UserTokens:
    """One sign-in's tokens as the fake issued them (the latest pair of a chain)."""

    open_id: str
    app_id: str
    scope: str
    access_token: str
    access_expires_at: float
    refresh_token: str | None
    refresh_expires_at: float
    refresh_used: bool = False
    revoked: bool = False
    history: list[str] = field(default_factory=list)


class OAuthHandlers:
    """Mixed into FeishuFake: needs `now()`, `_apps`, and the request log (`calls`)."""

    def __init__(self) -> None:
        self.approving_user = "ou_owner"  # who is signed in at the browser that approves
        self.user_names: dict[str, str] = {}
        self.user_token_ttl = USER_TOKEN_TTL
        self.refresh_token_ttl = REFRESH_TOKEN_TTL
        self.codes: dict[str, IssuedCode] = {}
        self.user_tokens: dict[str, UserTokens] = {}  # by access token
        self.refresh_tokens: dict[str, UserTokens] = {}  # by refresh token (used ones too)

    # what FeishuFake provides
    _apps: dict[str, str]

    def now(self) -> float:
        raise NotImplementedError

    def add_oauth_routes(self, app: web.Application) -> None:
        app.router.add_get("/open-apis/authen/v1/authorize", self._authorize)
        app.router.add_post("/open-apis/authen/v2/oauth/token", self._oauth_token)
        app.router.add_get("/open-apis/authen/v1/user_info", self._user_info)

    # ---- test controls ---------------------------------------------------------------------

    def revoke_user_tokens(self, open_id: str) -> None:
        """The user revoked the app's authorization: their tokens stop working."""
        for tokens in self.refresh_tokens.values():
            if tokens.open_id == open_id:
                tokens.revoked = True
        for tokens in self.user_tokens.values():
            if tokens.open_id == open_id:
                tokens.revoked = True

    def user_token_valid(self, access_token: str) -> bool:
        tokens = self.user_tokens.get(access_token)
        return (
            tokens is not None
            and not tokens.revoked
            and tokens.access_token == access_token
            and tokens.access_expires_at > self.now()
        )

    # ---- endpoints -------------------------------------------------------------------------

    async def _authorize(self, request: web.Request) -> web.StreamResponse:
        q = request.query
        if q.get("client_id") not in self._apps or q.get("response_type") != "code":
            return web.Response(status=400, text="invalid client_id or response_type")
        redirect_uri = q.get("redirect_uri", "")
        if not redirect_uri.startswith(("http://", "https://")):
            return web.Response(status=400, text="invalid redirect_uri")
        code = secrets.token_hex(16)
        self.codes[code] = IssuedCode(
            code, q["client_id"], self.approving_user, redirect_uri, q.get("scope", ""), self.now()
        )
        answer = {"code": code}
        if "state" in q:
            answer["state"] = q["state"]
        separator = "&" if urllib.parse.urlsplit(redirect_uri).query else "?"
        location = redirect_uri + separator + urllib.parse.urlencode(answer)
        return web.Response(status=302, headers={"Location": location})

    async def _oauth_token(self, request: web.Request) -> web.Response:
        try:
            body = json.loads(await request.read())
        except ValueError:
            body = None
        try:
            if not isinstance(body, dict):
                raise _OAuthError(BAD_REQUEST)
            app_id = str(body.get("client_id", ""))
            if app_id not in self._apps or self._apps[app_id] != body.get("client_secret"):
                raise _OAuthError(INVALID_CLIENT)
            grant = body.get("grant_type")
            if grant == "authorization_code":
                tokens = self._exchange_code(app_id, body)
            elif grant == "refresh_token":
                tokens = self._use_refresh_token(app_id, body)
            else:
                raise _OAuthError(UNSUPPORTED_GRANT)
        except _OAuthError as exc:
            code, error, description = exc.err
            refused = {"code": code, "error": error, "error_description": description}
            return web.json_response(refused, status=400)
        answer: dict[str, Any] = {
            "code": 0,
            "access_token": tokens.access_token,
            "expires_in": int(tokens.access_expires_at - self.now()),
            "scope": tokens.scope,
            "token_type": "Bearer",
        }
        if tokens.refresh_token is not None:
            answer["refresh_token"] = tokens.refresh_token
            answer["refresh_token_expires_in"] = int(tokens.refresh_expires_at - self.now())
        return web.json_response(answer)

    def _exchange_code(self, app_id: str, body: dict[str, Any]) -> UserTokens:
        issued = self.codes.get(str(body.get("code", "")))
        if issued is None or issued.app_id != app_id:
            raise _OAuthError(CODE_NOT_FOUND)
        if issued.used:
            raise _OAuthError(CODE_USED)
        if self.now() - issued.issued_at > CODE_TTL:
            raise _OAuthError(CODE_EXPIRED)
        if body.get("redirect_uri") and body["redirect_uri"] != issued.redirect_uri:
            raise _OAuthError(REDIRECT_MISMATCH)
        issued.used = True
        return self._issue(app_id, issued.open_id, issued.scope)

    def _use_refresh_token(self, app_id: str, body: dict[str, Any]) -> UserTokens:
        old = self.refresh_tokens.get(str(body.get("refresh_token", "")))
        if old is None or old.app_id != app_id:
            raise _OAuthError(REFRESH_INVALID)
        if old.revoked:
            raise _OAuthError(REFRESH_REVOKED)
        if old.refresh_used:
            raise _OAuthError(REFRESH_USED)
        if old.refresh_expires_at <= self.now():
            raise _OAuthError(REFRESH_EXPIRED)
        old.refresh_used = True  # single use: the old one is refused from now on
        fresh = self._issue(app_id, old.open_id, old.scope)
        fresh.history = [*old.history, old.access_token]
        return fresh

    def _issue(self, app_id: str, open_id: str, scope: str) -> UserTokens:
        now = self.now()
        offline = "offline_access" in scope.split()
        tokens = UserTokens(
            open_id=open_id,
            app_id=app_id,
            scope=scope,
            access_token="u-" + secrets.token_hex(20),
            access_expires_at=now + self.user_token_ttl,
            refresh_token=("ur-" + secrets.token_hex(20)) if offline else None,
            refresh_expires_at=now + self.refresh_token_ttl,
        )
        self.user_tokens[tokens.access_token] = tokens
        if tokens.refresh_token is not None:
            self.refresh_tokens[tokens.refresh_token] = tokens
        return tokens

    async def _user_info(self, request: web.Request) -> web.Response:
        scheme, _, value = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not self.user_token_valid(value.strip()):
            answer = {"code": 99991668, "msg": "Invalid access token for authorization."}
            return web.json_response(answer, status=400)
        open_id = self.user_tokens[value.strip()].open_id
        data = {"open_id": open_id, "name": self.user_names.get(open_id, open_id)}
        return web.json_response({"code": 0, "msg": "success", "data": data})
