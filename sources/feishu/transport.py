"""Calling the Feishu Open API on one kept-alive HTTP session: the SDK's typed requests sent
as the SDK would send them, answers read as plain JSON; and, for history sync, call pacing
(at most N calls at once, a minimum gap between starts). The SDK's `a*` methods open a new
HTTP client per call, with a fresh TLS context (about 23 ms of CPU each, and a new TCP and
TLS handshake): that capped a history sync at some 2,000 messages a second, and one process's
replies at 10-20 a second, the whole process busy building TLS contexts."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.parse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import httpx

from sources.feishu.sdk import JSON, BaseRequest, BaseResponse, RawResponse, RequestOption

MAX_CONCURRENT_CALLS = 4
MIN_CALL_GAP = 0.25  # seconds between call starts


DOWNLOAD_SECONDS = 300.0  # a whole download (a message's file, up to 100 MB)


class Pacer:
    """At most `concurrency` calls at once, and `min_gap` seconds between call starts."""

    def __init__(
        self, concurrency: int = MAX_CONCURRENT_CALLS, min_gap: float = MIN_CALL_GAP
    ) -> None:
        self.min_gap = min_gap
        self._slots = asyncio.Semaphore(concurrency)
        self._lock = asyncio.Lock()
        self._next_start = 0.0

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        async with self._slots:
            if self.min_gap > 0:
                async with self._lock:
                    now = time.monotonic()
                    if self._next_start > now:
                        await asyncio.sleep(self._next_start - now)
                    self._next_start = max(now, self._next_start) + self.min_gap
            yield


class ResourceTooLarge(Exception):
    """A downloaded file passed the size limit (its bytes so far, or its declared length)."""

    def __init__(self, size: int) -> None:
        super().__init__(f"larger than the limit ({size} bytes or more)")
        self.size = size


class JsonResponse(BaseResponse):
    """An Open API answer as plain JSON: `code`, `msg`, and `data` as a dict. It honours the
    contract `FeishuApi.call` relies on (`success()`, `code`, `msg`, `raw`); the SDK's typed
    unmarshalling would cost more than everything else a message needs on its way in."""

    def __init__(self, body: dict[str, Any], raw: RawResponse) -> None:
        super().__init__()
        code = body.get("code")
        self.code = code if isinstance(code, int) else None
        self.msg = str(body.get("msg") or "")
        data = body.get("data")
        self.data: dict[str, Any] = data if isinstance(data, dict) else {}
        self.raw = raw


def validate_domain(domain: str) -> None:
    """The check `lark.Client.builder().domain()` makes (lark_oapi/client.py
    `_validate_domain`): an origin, https except on loopback, no credentials in it, since the
    app secret and tokens are sent there."""
    parsed = urllib.parse.urlsplit(domain) if isinstance(domain, str) else None
    if parsed is None or not domain:
        raise ValueError("domain must be a non-empty https URL")
    if parsed.scheme == "http":
        if (parsed.hostname or "").lower() not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError(f"domain must use https scheme (got {domain!r})")
    elif parsed.scheme != "https":
        raise ValueError(f"domain must use https scheme (got {domain!r})")
    if not parsed.netloc:
        raise ValueError(f"domain missing host (got {domain!r})")
    if "@" in parsed.netloc:
        raise ValueError(f"domain must not embed credentials (got {domain!r})")
    if parsed.path or parsed.query or parsed.fragment:
        raise ValueError(
            "domain must be an origin (scheme + host[:port]) without path/query/fragment"
            f" (got {domain!r})"
        )


def _bearer(option: RequestOption) -> str | None:
    """The owner's user_access_token when the call is made as the owner (issue #41: the
    calendar, documents and tasks are read and changed as the owner), else the app's."""
    return option.user_access_token or option.tenant_access_token


class KeptAliveTransport:
    """Executes the SDK's typed requests on one kept-alive HTTP session (what
    `Transport.aexecute` does, minus a new client per call: the method, path parameters,
    queries and the JSON body as the SDK serializes it). Transport failures are raised as
    `httpx.TransportError` and unreadable bodies as `ValueError`, which is what `FeishuApi.call`
    maps to "unreachable, retry" and "unreadable answer"."""

    def __init__(self, domain: str, *, timeout: float = 15.0) -> None:
        validate_domain(domain.rstrip("/"))  # the app secret and tokens are sent there
        self.domain = domain.rstrip("/")
        self.timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                timeout=self.timeout,
                headers={"User-Agent": "maka-assistant"},
                # The callers' pools bound the requests in flight (the sender delivers
                # MAKA_BOT_CONCURRENCY at once, up to 256, beside syncs and commands);
                # aiohttp's default of 100 connections would queue the rest here, unseen.
                connector=aiohttp.TCPConnector(limit=0),
            )
        return self._session

    def _url(self, request: BaseRequest) -> str:
        uri = request.uri
        for key, value in (request.paths or {}).items():  # as the SDK's `_build_url`
            uri = uri.replace(":" + key, urllib.parse.quote(str(value or ""), safe=""))
        return f"{self.domain}{uri}"

    async def send(
        self, request: BaseRequest, option: RequestOption, *, timeout: float | None = None
    ) -> JsonResponse:
        """`timeout`: seconds for this call, where the session's would be too short (a
        minute of speech to recognise)."""
        body = None if request.body is None else json.loads(JSON.marshal(request.body))
        try:
            async with self._http().request(
                request.http_method.name,
                self._url(request),
                params=request.queries,
                json=body,
                headers={"Authorization": f"Bearer {_bearer(option)}"},
                timeout=self.timeout if timeout is None else aiohttp.ClientTimeout(total=timeout),
            ) as resp:
                content = await resp.read()
                status, headers = resp.status, dict(resp.headers)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise httpx.TransportError(f"{type(exc).__name__}: {exc}") from exc
        raw = RawResponse()
        raw.status_code = status
        raw.headers = headers
        raw.content = content
        body = json.loads(content)
        if not isinstance(body, dict):
            raise ValueError(f"expected a JSON object, got {type(body).__name__}")
        return JsonResponse(body, raw)

    async def download(
        self, request: BaseRequest, option: RequestOption, *, max_bytes: int
    ) -> JsonResponse:
        """A request whose answer is a file (a message's resource): on success a JsonResponse
        with code 0 and the bytes as `raw.content`, read in chunks and abandoned as soon as
        they pass `max_bytes` (ResourceTooLarge); an error is Feishu's JSON, as for `send`."""
        try:
            async with self._http().get(
                self._url(request),
                params=request.queries,
                headers={"Authorization": f"Bearer {option.tenant_access_token}"},
                # A file of tens of MB takes longer than an API call; a stalled one is cut
                # off by the read timeout, not after the whole.
                timeout=aiohttp.ClientTimeout(total=DOWNLOAD_SECONDS, sock_read=self.timeout.total),
            ) as resp:
                status, headers = resp.status, dict(resp.headers)
                is_json = resp.content_type == "application/json"
                if status == 200 and not is_json:
                    if (resp.content_length or 0) > max_bytes:
                        raise ResourceTooLarge(resp.content_length or 0)
                    chunks, size = [], 0
                    async for chunk in resp.content.iter_chunked(1 << 16):
                        size += len(chunk)
                        if size > max_bytes:
                            raise ResourceTooLarge(size)
                        chunks.append(chunk)
                    content, body = b"".join(chunks), {"code": 0, "msg": "success"}
                else:
                    content = await resp.content.read(1 << 20)  # an error body is small
                    body = json.loads(content)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise httpx.TransportError(f"{type(exc).__name__}: {exc}") from exc
        if not isinstance(body, dict):
            raise ValueError(f"expected a JSON object, got {type(body).__name__}")
        raw = RawResponse()
        raw.status_code = status
        raw.headers = headers
        raw.content = content
        return JsonResponse(body, raw)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
