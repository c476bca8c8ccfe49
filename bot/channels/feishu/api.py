"""The Feishu Open API: the lark-oapi SDK's typed requests, sent on one kept-alive session
(`sources/feishu/transport.py`), with what the SDK leaves out.

The SDK's async methods would open a new HTTP client (and TLS context) per call and fetch the
tenant token with blocking `requests`; we send its requests ourselves, with our own token
from an async cache, refreshed when Feishu says it is invalid.
The SDK never retries; we retry rate limits (HTTP 429 / code 99991400, waiting
`x-ogw-ratelimit-reset`), 230020 and 5xx through the one retry policy. Every HTTP call is
counted per API and day, because free tenants have a monthly quota.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import aiohttp
import httpx

from bot.config import Settings
from bot.retry import retrying
from sources.feishu.sdk import (
    AccessTokenType,
    BaseRequest,
    BaseResponse,
    GetMessageResourceRequest,
    HttpMethod,
    RequestOption,
)
from sources.feishu.transport import JsonResponse, KeptAliveTransport
from storage.db import Database

if TYPE_CHECKING:
    from bot.channels.api_usage import ApiUsageCounter

log = logging.getLogger(__name__)

AUTH_ERRORS = frozenset({99991661, 99991663, 99991668})  # token missing, invalid, expired
RATE_LIMITED = 99991400
CHAT_RATE_LIMITED = 230020
TOKEN_REFRESH_MARGIN = 300.0  # seconds before expiry when a token is renewed

R = TypeVar("R", bound=BaseResponse)


class UsageCounter(Protocol):
    async def count(self, api: str) -> None: ...


class FeishuApiError(Exception):
    def __init__(
        self,
        api: str,
        *,
        code: int | None,
        msg: str,
        http_status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{api}: code {code} HTTP {http_status}: {msg}")
        self.api, self.code, self.msg = api, code, msg
        self.http_status = http_status
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return (
            self.http_status == 429
            or self.code in (RATE_LIMITED, CHAT_RATE_LIMITED)
            or self.code in AUTH_ERRORS
            or (self.http_status is not None and self.http_status >= 500)
        )


class FeishuUnreachable(Exception):
    """No answer (connection failed, reset or timed out): the outcome is unknown."""

    retry_after: float | None = None


def is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, FeishuApiError):
        return exc.retryable
    return isinstance(exc, FeishuUnreachable)


@dataclass(frozen=True)
class BotInfo:
    open_id: str
    app_name: str


class FeishuApi:
    def __init__(
        self,
        *,
        app_id: str,
        app_secret: str,
        domain: str,
        usage: UsageCounter,
        timeout: float = 15.0,
        attempts: int = 6,
        max_wait: float = 60.0,
    ) -> None:
        self.app_id, self.app_secret, self.domain = app_id, app_secret, domain.rstrip("/")
        self.usage = usage
        self.timeout = timeout
        self.attempts = attempts
        self.max_wait = max_wait
        self.transport = KeptAliveTransport(self.domain, timeout=timeout)
        self._token: str | None = None
        self._token_expires = 0.0
        self._token_lock = asyncio.Lock()

    # --- tenant token -------------------------------------------------------------------

    async def tenant_token(self) -> str:
        async with self._token_lock:
            if self._token and time.monotonic() < self._token_expires - TOKEN_REFRESH_MARGIN:
                return self._token
            self._token, ttl = await self._fetch_token()
            self._token_expires = time.monotonic() + ttl
            return self._token

    def _forget_token(self, token: str) -> None:
        if self._token == token:
            self._token = None

    async def _fetch_token(self) -> tuple[str, float]:
        api = "auth.tenant_access_token"
        url = f"{self.domain}/open-apis/auth/v3/tenant_access_token/internal"
        await self.usage.count(api)
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout)) as http,
                http.post(url, json={"app_id": self.app_id, "app_secret": self.app_secret}) as r,
            ):
                status = r.status
                body = await r.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            raise FeishuUnreachable(f"{api}: {type(exc).__name__}: {exc}") from exc
        if not isinstance(body, dict) or body.get("code") != 0:
            code = body.get("code") if isinstance(body, dict) else None
            msg = str(body.get("msg")) if isinstance(body, dict) else str(body)[:200]
            raise FeishuApiError(api, code=code, msg=msg, http_status=status)
        return str(body["tenant_access_token"]), float(body.get("expire", 7200))

    # --- calls ----------------------------------------------------------------------------

    async def send(
        self, request: BaseRequest, option: RequestOption, *, timeout: float | None = None
    ) -> JsonResponse:
        """One typed request of the SDK, on the kept-alive session (for `call`'s `send`);
        `timeout` replaces the session's for a call known to take longer."""
        return await self.transport.send(request, option, timeout=timeout)

    async def aclose(self) -> None:
        await self.transport.aclose()

    async def call(
        self,
        api: str,
        send: Callable[[RequestOption], Awaitable[R]],
        *,
        attempts: int | None = None,
        max_wait: float | None = None,
    ) -> R:
        """Run one SDK call with our token, counting, and the retry policy (`attempts` and
        `max_wait` narrow it for a call that must not wait long, like a receipt reaction).
        Calls made as the owner go through sources/feishu/owner_api.py instead."""
        async for attempt in retrying(
            is_retryable,
            attempts=attempts or self.attempts,
            initial_wait=0.5,
            max_wait=self.max_wait if max_wait is None else max_wait,
        ):
            with attempt:
                return await self._call_once(api, send)
        raise AssertionError("unreachable")

    async def _call_once(self, api: str, send: Callable[[RequestOption], Awaitable[R]]) -> R:
        token = await self.tenant_token()
        option = RequestOption.builder().tenant_access_token(token).build()
        await self.usage.count(api)
        try:
            resp = await send(option)
        except httpx.TransportError as exc:
            raise FeishuUnreachable(f"{api}: {type(exc).__name__}: {exc}") from exc
        except (ValueError, json.JSONDecodeError) as exc:
            # The SDK parses every body as JSON; a proxy's HTML error page lands here.
            raise FeishuApiError(api, code=None, msg=f"unreadable answer: {exc}") from exc
        raw = resp.raw
        status = raw.status_code if raw is not None else None
        if resp.success() and (status is None or status < 400):
            return resp
        if resp.code in AUTH_ERRORS:
            self._forget_token(token)
        raise FeishuApiError(
            api,
            code=resp.code,
            msg=resp.msg or "",
            http_status=status,
            retry_after=_rate_limit_reset(raw.headers if raw is not None else None, resp.code),
        )

    async def bot_info(self) -> BotInfo:
        request = (
            BaseRequest.builder()
            .http_method(HttpMethod.GET)
            .uri("/open-apis/bot/v3/info")
            .token_types({AccessTokenType.TENANT})
            .build()
        )
        resp = await self.call("bot.info", lambda opt: self.send(request, opt))
        content = resp.raw.content if resp.raw is not None else b"{}"
        bot = json.loads(content).get("bot") or {}  # `bot` is top level, not under `data`
        if not bot.get("open_id"):
            raise FeishuApiError("bot.info", code=None, msg="answer has no bot.open_id")
        return BotInfo(open_id=str(bot["open_id"]), app_name=str(bot.get("app_name", "")))


def counted_api(
    settings: Settings, db: Database, **options: Any
) -> tuple[FeishuApi, ApiUsageCounter]:
    """A FeishuApi for the configured app, its calls counted in `db` (the history sync), and
    the counter, to close after the API. `options`: FeishuApi's."""
    from bot.channels.api_usage import ApiUsageCounter

    assert settings.feishu_app_id and settings.feishu_app_secret
    usage = ApiUsageCounter(db, "feishu", settings.tz)
    api = FeishuApi(
        app_id=settings.feishu_app_id,
        app_secret=settings.feishu_app_secret.get_secret_value(),
        domain=settings.feishu_domain,
        usage=usage,
        **options,
    )
    return api, usage


def _rate_limit_reset(headers: dict[str, Any] | None, code: int | None) -> float | None:
    if not headers:
        return None
    lowered = {str(k).lower(): v for k, v in headers.items()}
    for name in ("x-ogw-ratelimit-reset", "retry-after"):
        value = lowered.get(name)
        if value is not None:
            try:
                return max(0.0, float(value))
            except ValueError:
                return None
    return 1.0 if code in (RATE_LIMITED, CHAT_RATE_LIMITED) else None


async def message_resource(
    api: FeishuApi, message_id: str, file_key: str, *, image: bool, max_bytes: int
) -> bytes:
    """A message's image or file (voice and video are files), at most `max_bytes`
    (`sources.feishu.transport.ResourceTooLarge` past it): `GET /open-apis/im/v1/messages/
    :message_id/resources/:file_key?type=image|file`
    (https://open.feishu.cn/document/server-docs/im-v1/message/get-2). Tried once: the
    caller backs a failing resource off on its row (and parks it), so a failing download
    holds no worker slot while it waits."""
    request = (
        GetMessageResourceRequest.builder()
        .message_id(message_id)
        .file_key(file_key)
        .type("image" if image else "file")
        .build()
    )
    resp = await api.call(
        "im.message.resource",
        lambda opt: api.transport.download(request, opt, max_bytes=max_bytes),
        attempts=1,
    )
    return resp.raw.content if resp.raw is not None else b""
