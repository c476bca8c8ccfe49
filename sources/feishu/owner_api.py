"""Calling the Feishu Open API as the owner: JSON over one kept-alive session, with the
owner's user_access_token asked for on every request (the provider refreshes it; sources never
import bot, so they are given the provider, not the sign-in).

Feishu answers every business error with `{code, msg}` (HTTP 400 mostly; 429 with code
99991400 for rate limits: https://open.feishu.cn/document/server-docs/api-call-guide/frequency-control).
A non-zero code is a `FeishuError` carrying it, so a caller can tell "deleted" from "refused";
unreachable, 5xx and 429 are `FeishuBusy` (with the server's delay), tried again by the retry
the caller gives (bot/owner/api.py: the one policy), then raised: the sync runner or the
action worker backs off.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

from sources.base import SourceError

TokenProvider = Callable[[], Awaitable[str]]
Answer = dict[str, Any]
# How a call is tried again: given by the caller (bot/retry.py's one policy; sources never
# import bot), or once.
Retry = Callable[[Callable[[], Awaitable[Answer]]], Awaitable[Answer]]
# Counts one call by its API (the free tenant's monthly quota: bot/channels/api_usage.py).
Count = Callable[[str], Awaitable[None]]


def api_name(path: str) -> str:
    """A call's API as counted: the path's first three parts (`im/v1/messages`), so ids in
    a path (`docx/v1/documents/:id/raw_content`) do not make a name each."""
    return "/".join(path.split("/")[:3])


async def once(call: Callable[[], Awaitable[Answer]]) -> Answer:
    return await call()


class FeishuError(SourceError):
    """Feishu refused the request: `code` is its error code, str(exc) one line."""

    def __init__(self, code: int, msg: str, path: str) -> None:
        super().__init__(f"Feishu {path} failed: {code} {msg}")
        self.code = code


class FeishuBusy(Exception):
    """Rate limited or a server error: transient. `retry_after`: the server's delay
    (`x-ogw-ratelimit-reset`, seconds), which the retry policy waits."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class OwnerApi:
    def __init__(
        self,
        domain: str,
        token: TokenProvider,
        *,
        retry: Retry = once,
        timeout: float = 30.0,
        count: Count | None = None,
        on_close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        # Here, not at the top: transport imports the Feishu SDK (160 MB), which the embedded
        # service must not load (tests/web/test_footprint.py).
        from sources.feishu.transport import validate_domain

        validate_domain(domain.rstrip("/"))  # the owner's token is sent there
        self.domain = domain.rstrip("/")
        self.token = token
        self.retry = retry
        self.count = count
        self.on_close = on_close
        self.timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                timeout=self.timeout, headers={"User-Agent": "maka-assistant"}
            )
        return self._session

    async def call(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
        retry: bool = True,
    ) -> Answer:
        """`data` of the answer; FeishuError for a non-zero code, FeishuBusy for 429/5xx
        (tried again by the retry policy unless `retry` is False: a create that has no
        idempotency token)."""

        async def attempt() -> Answer:
            return await self._once(method, path, params, body)

        return await (self.retry(attempt) if retry else attempt())

    async def _once(
        self, method: str, path: str, params: dict[str, Any] | None, body: dict[str, Any] | None
    ) -> Answer:
        token = await self.token()  # a fresh one every call: the provider refreshes
        if self.count is not None:
            await self.count(api_name(path))
        query = {k: str(v) for k, v in (params or {}).items()}
        try:
            async with self._http().request(
                method,
                f"{self.domain}/open-apis/{path}",
                params=query,
                json=body,
                headers={"Authorization": f"Bearer {token}"},
            ) as resp:
                status, content = resp.status, await resp.read()
                reset = resp.headers.get("x-ogw-ratelimit-reset") or ""
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise FeishuBusy(f"Feishu {path} unreachable: {type(exc).__name__}") from exc
        if status == 429 or status >= 500:
            wait = float(reset) if reset.isdigit() else None
            raise FeishuBusy(f"Feishu {path}: HTTP {status}", wait)
        try:
            answer = json.loads(content)
        except ValueError:
            raise FeishuBusy(f"Feishu {path}: HTTP {status}, not JSON") from None
        if not isinstance(answer, dict):
            raise FeishuBusy(f"Feishu {path}: HTTP {status}, not a JSON object")
        code = answer.get("code")
        if code != 0:
            raise FeishuError(int(code or -1), str(answer.get("msg") or ""), path)
        data = answer.get("data")
        return data if isinstance(data, dict) else {}

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
        if self.on_close is not None:
            await self.on_close()
