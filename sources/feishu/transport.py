"""Reading the Feishu Open API for history sync: call pacing (at most N calls at once, a
minimum gap between starts) and one kept-alive HTTP session for the SDK's typed requests,
with answers read as plain JSON. The SDK's `a*` methods open a new HTTP client per call
(about 23 ms of CPU each), which would cap a sync at some 2,000 messages a second."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import httpx

from sources.feishu.sdk import BaseRequest, BaseResponse, RawResponse, RequestOption

MAX_CONCURRENT_CALLS = 4
MIN_CALL_GAP = 0.25  # seconds between call starts


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


class KeptAliveTransport:
    """Executes the SDK's typed requests on one kept-alive HTTP session (what
    `Transport.aexecute` does, minus a new client per call). Transport failures are raised as
    `httpx.TransportError` and unreadable bodies as `ValueError`, which is what `FeishuApi.call`
    maps to "unreachable, retry" and "unreadable answer"."""

    def __init__(self, domain: str, *, timeout: float = 15.0) -> None:
        self.domain = domain.rstrip("/")
        self.timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                timeout=self.timeout, headers={"User-Agent": "maka-assistant/sources"}
            )
        return self._session

    async def get(self, request: BaseRequest, option: RequestOption) -> JsonResponse:
        try:
            async with self._http().get(
                f"{self.domain}{request.uri}",
                params=request.queries,
                headers={"Authorization": f"Bearer {option.tenant_access_token}"},
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

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
