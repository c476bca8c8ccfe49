"""A loopback Feishu Open API server for tests: real HTTP on 127.0.0.1, documented wire format.

The real lark-oapi SDK (`lark.Client.builder().domain(fake.url)`) and plain aiohttp code talk to
it. It speaks the subset Maka uses: tenant token, bot info, message create/reply/list, chat
list, reactions, CardKit cards (`feishu_cardkit.py`), speech recognition (`feishu_speech.py`),
and lets a test inject the failures Feishu really produces (rate limits, expired tokens, lost
responses). Message handling lives in `feishu_im.py`, reactions in `feishu_reactions.py`; the
webhook event client in `feishu_events.py`; data types and error codes (with their doc
sources) in `feishu_models.py`; the long-connection (WebSocket) mode in `feishu_ws.py`.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from aiohttp import web
from multidict import CIMultiDict

from .feishu_calendar import CalendarHandlers
from .feishu_cardkit import CardKitHandlers, FakeCard
from .feishu_events import FeishuEventSender, decrypt_event, sign_event
from .feishu_im import ImHandlers
from .feishu_models import (
    APP_INVALID_PARAM,
    APP_SECRET_INVALID,
    INVALID_TOKEN,
    MALFORMED_TOKEN,
    MISSING_TOKEN,
    RATE_LIMITED,
    RESOURCE_NOT_FOUND,
    Chat,
    FeishuApiError,
    HistoryMessage,
    JSONDict,
    Mention,
    PatchedCard,
    RecordedRequest,
    SentMessage,
)
from .feishu_oauth import OAuthHandlers
from .feishu_reactions import Reaction, ReactionEvent, ReactionHandlers
from .feishu_resources import FakeResource, ResourceHandlers
from .feishu_speech import SpeechHandlers
from .feishu_workspace import FakeDoc, FakeTask, WorkspaceHandlers
from .feishu_ws import (
    WsClientConfig,
    WsDelivery,
    WsFrame,
    WsHandlers,
    WsNotConnected,
    WsPing,
    WsPushTimeout,
)

__all__ = [
    "Chat",
    "FakeCard",
    "FakeDoc",
    "FakeResource",
    "FakeTask",
    "FeishuApiError",
    "FeishuEventSender",
    "FeishuFake",
    "HistoryMessage",
    "Mention",
    "PatchedCard",
    "Reaction",
    "ReactionEvent",
    "RecordedRequest",
    "SentMessage",
    "WsClientConfig",
    "WsDelivery",
    "WsFrame",
    "WsNotConnected",
    "WsPing",
    "WsPushTimeout",
    "decrypt_event",
    "sign_event",
]

TOKEN_TTL_SECONDS = 7200  # "tenant_access_token 的最大有效期是 2 小时"
TOKEN_RENEW_BELOW = 1800  # "剩余有效期小于 30 分钟时...返回一个新的 tenant_access_token"
UNAUTHENTICATED_PATHS = (
    "/open-apis/auth/v3/tenant_access_token/internal",
    "/open-apis/auth/v3/app_access_token/internal",
)


@dataclass
class _Token:
    value: str
    app_id: str
    expires_at: float
    revoked: bool = False


@dataclass
class _Fault:
    path_prefix: str
    method: str | None
    remaining: int
    kind: str  # "respond" | "drop" | "hold"
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] | None = None
    release: asyncio.Event | None = None  # "hold": handled once this is set
    arrived: asyncio.Event | None = None  # "hold": the held request came in

    def matches(self, request: web.Request, kind: str) -> bool:
        return (
            self.kind == kind
            and self.remaining > 0
            and request.path.startswith(self.path_prefix)
            and (self.method is None or self.method.upper() == request.method)
        )


class FeishuFake(
    CalendarHandlers,
    CardKitHandlers,
    ImHandlers,
    OAuthHandlers,
    ReactionHandlers,
    ResourceHandlers,
    SpeechHandlers,
    WorkspaceHandlers,
    WsHandlers,
):
    """`async with FeishuFake() as fake:` then point clients at `fake.url`.

    HTTP statuses: per the message docs every business error is HTTP 400; rate limits are
    HTTP 429 (frequency-control doc). The docs give no HTTP status for the 9999166x auth codes;
    public captures show HTTP 400 for that gateway family, so `auth_error_status` defaults to 400.
    """

    def __init__(
        self,
        *,
        apps: dict[str, str] | None = None,
        bot_open_id: str = "ou_bot",
        bot_name: str = "Maka",
        tenant_key: str = "tenant_fake",
        enforce_chat_qps: bool = False,
        chat_qps: int = 5,
        auth_error_status: int = 400,
    ) -> None:
        ImHandlers.__init__(self)
        CalendarHandlers.__init__(self)
        OAuthHandlers.__init__(self)
        CardKitHandlers.__init__(self)
        ReactionHandlers.__init__(self)
        ResourceHandlers.__init__(self)
        SpeechHandlers.__init__(self)
        WorkspaceHandlers.__init__(self)
        WsHandlers.__init__(self)
        self.bot_open_id = bot_open_id
        self.bot_name = bot_name
        self.tenant_key = tenant_key
        self.enforce_chat_qps = enforce_chat_qps
        self.chat_qps = chat_qps
        self.auth_error_status = auth_error_status
        self.url = ""
        self.sent: list[SentMessage] = []
        self.requests: list[RecordedRequest] = []
        self._apps: dict[str, str] = dict(apps or {})
        self._tokens: dict[str, _Token] = {}
        self._current_token: dict[str, str] = {}
        self._faults: list[_Fault] = []
        self._clock_offset = 0.0
        self._runner: web.AppRunner | None = None

    # ---- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        app = web.Application(middlewares=[self._middleware], client_max_size=8 * 1024 * 1024)
        app.router.add_post(UNAUTHENTICATED_PATHS[0], self._tenant_token)
        app.router.add_post(UNAUTHENTICATED_PATHS[1], self._app_token)
        app.router.add_get("/open-apis/bot/v3/info", self._bot_info)
        self.add_im_routes(app)
        self.add_cardkit_routes(app)
        self.add_calendar_routes(app)
        self.add_oauth_routes(app)
        self.add_reaction_routes(app)
        self.add_resource_routes(app)
        self.add_speech_routes(app)
        self.add_workspace_routes(app)
        self.add_ws_routes(app)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FeishuFake:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # ---- clock -----------------------------------------------------------------------------

    def now(self) -> float:
        """The fake's clock (epoch seconds); `advance` moves it for token/uuid/QPS windows."""
        return time.time() + self._clock_offset

    def advance(self, seconds: float) -> None:
        self._clock_offset += seconds

    # ---- apps and tokens -------------------------------------------------------------------

    def add_app(self, app_id: str, app_secret: str) -> None:
        self._apps[app_id] = app_secret

    def new_app(self) -> tuple[str, str]:
        """Register a fresh `cli_<16 hex>` app; the SDK's token cache is global per app_id."""
        app_id, secret = "cli_" + secrets.token_hex(8), secrets.token_urlsafe(24)
        self.add_app(app_id, secret)
        return app_id, secret

    def expire_tokens(self) -> None:
        """Every issued tenant token stops working (99991663) until a new one is fetched."""
        for token in self._tokens.values():
            token.revoked = True
        self._current_token.clear()

    def issue_token(self, app_id: str) -> tuple[str, int]:
        """What `tenant_access_token/internal` answers: the same token until < 30 min remain."""
        now = self.now()
        current = self._tokens.get(self._current_token.get(app_id, ""))
        if current and not current.revoked and current.expires_at - now >= TOKEN_RENEW_BELOW:
            return current.value, int(current.expires_at - now)
        token = _Token("t-" + secrets.token_hex(20), app_id, now + TOKEN_TTL_SECONDS)
        self._tokens[token.value] = token
        self._current_token[app_id] = token.value
        return token.value, TOKEN_TTL_SECONDS

    def authenticate(self, request: web.Request) -> str:
        """The app_id behind the request's `Authorization: Bearer t-...`, or a Feishu error."""
        header = request.headers.get("Authorization", "")
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise FeishuApiError(MISSING_TOKEN, http_status=self.auth_error_status)
        value = value.strip()
        if not value.startswith(("t-", "u-")):
            raise FeishuApiError(MALFORMED_TOKEN, http_status=self.auth_error_status)
        if value.startswith("u-"):  # a user's token (feishu_oauth.py): the app it was issued to
            if not self.user_token_valid(value):
                raise FeishuApiError(INVALID_TOKEN, http_status=self.auth_error_status)
            return self.user_tokens[value].app_id
        token = self._tokens.get(value)
        if token is None or token.revoked or token.expires_at <= self.now():
            raise FeishuApiError(INVALID_TOKEN, http_status=self.auth_error_status)
        return token.app_id

    # ---- failure injection -----------------------------------------------------------------

    def fail_next(
        self,
        path_prefix: str,
        *,
        times: int = 1,
        http_status: int = 200,
        code: int = 1500,
        msg: str = "internal error",
        headers: dict[str, str] | None = None,
        method: str | None = None,
        raw_body: bytes | str | None = None,
    ) -> None:
        """The next `times` matching requests get this answer instead of being processed.

        `raw_body` replaces the JSON envelope (e.g. an HTML 502 page from a proxy).
        """
        body: bytes | str
        if raw_body is None:
            body = json.dumps({"code": code, "msg": msg, "error": self._error_meta(code)})
            hdrs = {"Content-Type": "application/json; charset=utf-8", **(headers or {})}
        else:
            body, hdrs = raw_body, dict(headers or {})
        data = body.encode() if isinstance(body, str) else body
        self._faults.append(_Fault(path_prefix, method, times, "respond", http_status, data, hdrs))

    def rate_limit_next(
        self,
        path_prefix: str,
        *,
        times: int,
        reset_seconds: int = 1,
        limit: int = 50,
        method: str | None = None,
    ) -> None:
        """HTTP 429, code 99991400, `x-ogw-ratelimit-limit/-reset`, as the frequency-control doc."""
        headers = {"x-ogw-ratelimit-limit": str(limit), "x-ogw-ratelimit-reset": str(reset_seconds)}
        code, msg = RATE_LIMITED
        self.fail_next(
            path_prefix,
            times=times,
            http_status=429,
            code=code,
            msg=msg,
            headers=headers,
            method=method,
        )

    def hold_next(
        self, path_prefix: str, *, method: str | None = None
    ) -> tuple[asyncio.Event, asyncio.Event]:
        """The next matching request is handled only once the first event returned is set (a
        slow API call); the second is set when that request has arrived."""
        release, arrived = asyncio.Event(), asyncio.Event()
        self._faults.append(
            _Fault(path_prefix, method, 1, "hold", release=release, arrived=arrived)
        )
        return release, arrived

    def drop_response_after_commit(
        self, path_prefix: str, times: int = 1, *, method: str | None = None
    ) -> None:
        """The request is fully processed (a message IS created), then the connection is
        aborted without a response: the client sees a connection error."""
        self._faults.append(_Fault(path_prefix, method, times, "drop"))

    def clear_faults(self) -> None:
        """Forget every injected fault that has not fired yet."""
        self._faults.clear()

    def _take_fault(self, request: web.Request, kind: str) -> _Fault | None:
        for fault in self._faults:
            if fault.matches(request, kind):
                fault.remaining -= 1
                return fault
        return None

    # ---- assertions helpers ----------------------------------------------------------------

    def calls(self, path_prefix: str, method: str | None = None) -> int:
        return sum(
            1
            for r in self.requests
            if r.path.startswith(path_prefix) and (method is None or r.method == method.upper())
        )

    # ---- plumbing --------------------------------------------------------------------------

    @staticmethod
    def _error_meta(code: int) -> JSONDict:
        log_id = time.strftime("%Y%m%d%H%M%S") + secrets.token_hex(11).upper()
        return {
            "log_id": log_id,
            "troubleshooter": "排查建议查看(Troubleshooting suggestions): https://open.feishu.cn/"
            f"search?from=openapi&log_id={log_id}&code={code}",
        }

    def error_response(self, err: FeishuApiError) -> web.Response:
        error = {**self._error_meta(err.code), **err.error}
        body = {"code": err.code, "msg": err.msg, "error": error}
        return web.json_response(body, status=err.http_status, headers=err.headers)

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        raw = await request.read()
        try:
            parsed: Any = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        record = RecordedRequest(
            request.method,
            request.path,
            dict(request.query),
            CIMultiDict(request.headers),
            raw,
            parsed,
            time=self.now(),
            peer=str(request.transport.get_extra_info("peername") if request.transport else ""),
        )
        self.requests.append(record)
        held = self._take_fault(request, "hold")
        if held is not None and held.release is not None and held.arrived is not None:
            held.arrived.set()
            await held.release.wait()
        fault = self._take_fault(request, "respond")
        response: web.StreamResponse
        if fault is not None:
            response = web.Response(status=fault.status, body=fault.body, headers=fault.headers)
        else:
            try:
                response = await handler(request)
            except FeishuApiError as err:
                response = self.error_response(err)
            except web.HTTPException as exc:
                not_found = FeishuApiError(RESOURCE_NOT_FOUND, http_status=exc.status)
                response = self.error_response(not_found)
        record.status = response.status
        body = getattr(response, "body", None)
        if isinstance(body, bytes | bytearray):
            try:  # an answer in JSON; a file (a message's resource) is kept as its bytes
                is_json = response.content_type == "application/json"
                record.response = json.loads(body) if is_json else bytes(body)
            except (ValueError, RecursionError):
                record.response = bytes(body)
        if self._take_fault(request, "drop") is not None and request.transport is not None:
            record.status = None
            request.transport.abort()
        return response

    # ---- auth and bot endpoints ------------------------------------------------------------

    async def _read_credentials(self, request: web.Request) -> str:
        try:
            body = json.loads(await request.read())
        except ValueError:
            body = None
        if not isinstance(body, dict) or not body.get("app_id") or not body.get("app_secret"):
            raise FeishuApiError(APP_INVALID_PARAM)
        app_id = str(body["app_id"])
        if app_id not in self._apps:
            raise FeishuApiError(APP_INVALID_PARAM, detail="app_id not found")
        if self._apps[app_id] != body["app_secret"]:
            raise FeishuApiError(APP_SECRET_INVALID)
        return app_id

    async def _tenant_token(self, request: web.Request) -> web.Response:
        app_id = await self._read_credentials(request)
        token, expire = self.issue_token(app_id)
        return web.json_response(
            {"code": 0, "msg": "ok", "tenant_access_token": token, "expire": expire}
        )

    async def _app_token(self, request: web.Request) -> web.Response:
        app_id = await self._read_credentials(request)
        token, expire = self.issue_token(app_id)
        return web.json_response(
            {
                "code": 0,
                "msg": "ok",
                "app_access_token": "a-" + token[2:],
                "tenant_access_token": token,
                "expire": expire,
            }
        )

    async def _bot_info(self, request: web.Request) -> web.Response:
        self.authenticate(request)
        return web.json_response(
            {
                "code": 0,
                "msg": "ok",
                "bot": {  # top level, not under "data"
                    "activate_status": 2,
                    "app_name": self.bot_name,
                    "avatar_url": "https://s1-imfile.feishucdn.com/static-resource/v1/fake_avatar",
                    "ip_white_list": [],
                    "open_id": self.bot_open_id,
                },
            }
        )
