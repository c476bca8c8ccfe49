"""A provider for any OpenAI-compatible chat-completions endpoint (OpenAI, DeepSeek, vLLM,
Ollama, OpenRouter, ...).

The wire is plain JSON over aiohttp (the HTTP client the rest of the service uses), read the
way OpenAI's SDK reads it (an error body's `{"error": {...}}` unwrapped, its `message` shown,
tolerant of the gaps compatible servers leave). The SDK itself cost about 1 ms of CPU a call
over the same exchange (its request options, httpx, the typed response it builds), 15% of a
Bot turn's own work with a fast model. `bot.retry.retrying` is the one retry policy. Retried:
429, 408, 5xx, timeouts and connection errors. Not retried: every other 4xx (raised as
`ModelRequestRejected` with the server's message), a 429 that means "out of quota", and a 429
whose Retry-After is longer than `max_wait`. What a usable answer needs beyond one exchange
(reasoning kept out, tool JSON asked again, the input shrunk, a cut answer continued, the
content filter) is `bot.llm.recovery`'s; `stream` asks for SSE (`bot.llm.sse`); an Azure URL
is called at its deployment with its `api-key` header and `api-version`.
"""

from __future__ import annotations

import email.utils
import json
import logging
import math
import time
import urllib.parse
import urllib.request
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal

import aiohttp

from bot.llm.client import ProgressCallback
from bot.llm.error_kinds import (
    is_content_filter,
    is_context_too_long,
    is_stream_unsupported,
    is_tools_unsupported,
)
from bot.llm.openai_wire import (
    AZURE_API_VERSION,
    azure_url,
    completion_from_openai,
    is_azure,
    message_to_openai,
    tool_to_openai,
)
from bot.llm.recovery import complete_with_recovery
from bot.llm.sse import StreamAssembler, StreamError
from bot.llm.types import (
    Completion,
    Message,
    ModelContextTooLong,
    ModelRefused,
    ModelRequestRejected,
    ModelToolsUnsupported,
    ModelUnavailable,
    ToolSpec,
)
from bot.retry import retrying

log = logging.getLogger(__name__)

# 429 bodies with these codes mean "billing / quota", which no amount of waiting fixes.
_QUOTA_CODES = frozenset(
    {"insufficient_quota", "billing_hard_limit_reached", "1113"}  # 1113: GLM, in arrears
)

StreamMode = Literal["auto", "on", "off"]


class TransientModelError(Exception):
    """A failure worth retrying. `retry_after` (seconds) is the server's hint, if any; the
    retry policy in `bot.retry` reads it."""

    def __init__(
        self, message: str, *, status_code: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.retry_after = retry_after


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait according to `retry-after-ms` or `retry-after` (seconds or HTTP date).

    `headers` must be case-insensitive (httpx headers are)."""
    if headers is None:
        return None
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            continue
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        parsed = email.utils.parsedate_tz(value)
        if parsed is None:
            return None
        return max(0.0, float(email.utils.mktime_tz(parsed) - time.time()))
    except (TypeError, ValueError, OverflowError):
        return None


def _error_body(raw: bytes) -> Any:
    """An error response's body as the SDK reads it: JSON if it parses (the inner object of
    `{"error": ...}`), else the text."""
    text = raw.decode("utf-8", "replace").strip()
    try:
        body = json.loads(text)
    except ValueError:
        return text
    return body.get("error", body) if isinstance(body, dict) else body


def _server_message(status: int, body: Any) -> str:
    """The server's own explanation: `message` of an OpenAI-style error if present, else the
    body's text, else the status."""
    if isinstance(body, dict):
        message = body.get("message")
        if isinstance(message, str) and message:
            return message
    if isinstance(body, str) and body:
        return body[:300]
    return f"Error code: {status}" + (f" - {body}" if body not in (None, "") else "")


def _error_code(body: Any) -> str | None:
    if isinstance(body, dict):
        for key in ("code", "type"):
            value = body.get(key)
            if isinstance(value, str) and value in _QUOTA_CODES:
                return value
    return None


def http_error(status: int, raw: bytes, headers: Mapping[str, str]) -> Exception:
    """An HTTP error answer as a `TransientModelError` (retry) or a final `ModelError`."""
    body = _error_body(raw)
    message = _server_message(status, body)
    if status == 429:
        code = _error_code(body)
        if code in _QUOTA_CODES:
            return ModelRequestRejected(f"({code}) {message}", status_code=status)
        return TransientModelError(
            f"HTTP 429: {message}", status_code=status, retry_after=parse_retry_after(headers)
        )
    if status == 408 or status >= 500:
        return TransientModelError(
            f"HTTP {status}: {message}", status_code=status, retry_after=parse_retry_after(headers)
        )
    if is_content_filter(body, message):
        return ModelRefused(f"HTTP {status}: {message}")
    if is_context_too_long(body, message):
        return ModelContextTooLong(message, status_code=status)
    if is_tools_unsupported(message):
        return ModelToolsUnsupported(message, status_code=status)
    return ModelRequestRejected(message, status_code=status)


def env_proxy(url: str) -> str | None:
    """The proxy the environment names for `url` (HTTPS_PROXY, HTTP_PROXY, NO_PROXY), read
    once. aiohttp's `trust_env` would read the environment and ~/.netrc again on every
    request: 0.8 ms of CPU a model call."""
    parts = urllib.parse.urlsplit(url)
    if parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies().get(parts.scheme)


class OpenAICompatibleProvider:
    reports_progress = True  # takes `on_progress` (ModelClient)

    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str,
        *,
        timeout: float = 60.0,
        attempts: int = 4,
        max_wait: float = 20.0,
        initial_wait: float = 0.5,
        max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens",
        stream: StreamMode = "off",
        api_version: str | None = None,
    ) -> None:
        if attempts < 1:
            raise ValueError("attempts must be >= 1")
        self.name = model
        self.model = model
        self.base_url = base_url
        self.attempts = attempts
        self.max_wait = max_wait
        self.initial_wait = initial_wait
        self.max_tokens_param = max_tokens_param
        self.stream = stream
        # auto: streaming until the endpoint says it does not stream, then not again.
        self.streams = stream != "off"
        # Set once the endpoint sends `reasoning_content`: it then gets it back (DeepSeek).
        self._echo_reasoning = False
        self._extra: dict[str, Any] = {}  # fields a family needs in every non-streamed body
        self._query: dict[str, str] = {}
        if is_azure(base_url):  # the deployment names the model; key in `api-key`
            self._url = azure_url(base_url, model)
            self._query = {"api-version": api_version or AZURE_API_VERSION}
            self._headers = {"api-key": api_key, "Accept": "application/json"}
        else:
            self._url = base_url.rstrip("/")
            if api_version:
                self._query = {"api-version": api_version}
            self._headers = {"Authorization": f"Bearer {api_key}", "Accept": "application/json"}
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._proxy = env_proxy(self._url)
        self._session: aiohttp.ClientSession | None = None

    def _is_retryable(self, exc: BaseException) -> bool:
        if not isinstance(exc, TransientModelError):
            return False
        # A server that asks for more patience than we are allowed to spend: give up now
        # rather than hammer it early.
        return exc.retry_after is None or exc.retry_after <= self.max_wait

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> Completion:
        """One answer, after the repairs of `bot.llm.recovery` (a shrunk input, a re-asked
        tool call, a continued answer). Raises `ModelRefused` for the content filter."""

        async def exchange(sent: Sequence[Message], offered: Sequence[ToolSpec]) -> Completion:
            return await self._exchange(sent, offered, max_tokens, temperature, on_progress)

        return await complete_with_recovery(exchange, messages, tools)

    async def _exchange(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        max_tokens: int | None,
        temperature: float | None,
        on_progress: ProgressCallback | None,
    ) -> Completion:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [
                message_to_openai(m, echo_reasoning=self._echo_reasoning) for m in messages
            ],
        }
        if tools:
            body["tools"] = [tool_to_openai(t) for t in tools]
        if max_tokens is not None:
            body[self.max_tokens_param] = max_tokens
        if temperature is not None:
            body["temperature"] = temperature
        if self.streams:
            try:
                response = await self._retrying(lambda: self._stream(body, on_progress))
            except ModelRequestRejected as exc:
                if self.stream != "auto" or not is_stream_unsupported(exc.message):
                    raise
                log.warning("model %r does not stream (%s); asking without", self.model, exc)
                self.streams = False
        if not self.streams:
            response = await self._whole(body)
        completion = completion_from_openai(response, self.model, messages)
        self._echo_reasoning = self._echo_reasoning or _has_reasoning_field(response)
        return completion

    async def _whole(self, body: dict[str, Any]) -> Any:
        """A non-streamed exchange. Qwen's open thinking models over DashScope think by
        default and refuse to unless streamed: told so, they are asked (from then on) with
        thinking off."""
        try:
            return await self._retrying(lambda: self._create({**body, **self._extra}))
        except ModelRequestRejected as exc:
            if "enable_thinking" not in exc.message or "enable_thinking" in self._extra:
                raise
            log.warning("model %r thinks only when streamed; asking with thinking off", self.model)
            self._extra["enable_thinking"] = False
            return await self._retrying(lambda: self._create({**body, **self._extra}))

    async def _retrying(self, call: Callable[[], Awaitable[Any]]) -> Any:
        attempt_number = 0
        try:
            async for attempt in retrying(
                self._is_retryable,
                attempts=self.attempts,
                initial_wait=self.initial_wait,
                max_wait=self.max_wait,
            ):
                with attempt:
                    attempt_number = attempt.retry_state.attempt_number
                    try:
                        return await call()
                    except TransientModelError as exc:
                        log.warning(
                            "model call attempt %d/%d failed: %s",
                            attempt_number,
                            self.attempts,
                            exc,
                        )
                        raise
        except TransientModelError as exc:
            raise ModelUnavailable(
                f"model {self.model!r} unavailable after {attempt_number} attempt(s): {exc}"
            ) from exc
        raise AssertionError("unreachable: retrying either returns or raises")

    async def check(self) -> str:
        """One-line health description. Tries `GET /models`; if the server has no such
        endpoint, makes a one-token completion instead. Single attempt, no retries.
        Raises `ModelUnavailable` / `ModelRequestRejected` on failure."""
        try:
            try:
                page = await self._call("GET", "/models")
            except ModelRequestRejected as exc:
                if exc.status_code != 404:
                    raise
            else:
                listing = page.get("data") if isinstance(page, dict) else None
                ids = [str(m.get("id", "")) for m in listing or [] if isinstance(m, dict)]
                listed = "listed" if self.model in ids else "NOT listed"
                return (
                    f"{self.base_url}: reachable, {len(ids)} model(s) available, "
                    f"{self.model!r} {listed}"
                )
            ping = {
                "model": self.model,
                "messages": [{"role": "user", "content": "ping"}],
                self.max_tokens_param: 1,
            }
            completion = completion_from_openai(await self._create(ping), self.model)
        except TransientModelError as exc:
            raise ModelUnavailable(f"model server {self.base_url} unavailable: {exc}") from exc
        return (
            f"{self.base_url}: reachable (no /models endpoint), test completion by "
            f"{completion.model!r} ok"
        )

    async def _create(self, body: dict[str, Any]) -> Any:
        return await self._call("POST", "/chat/completions", {**body, "stream": False})

    async def _stream(self, body: dict[str, Any], on_progress: ProgressCallback | None) -> Any:
        """One streamed exchange, assembled into a non-streaming body (`bot.llm.sse`)."""
        streamed = {**body, "stream": True, "stream_options": {"include_usage": True}}
        assembler = StreamAssembler()
        try:
            async with self._http().post(
                self._url + "/chat/completions",
                json=streamed,
                params=self._query,
                proxy=self._proxy,
            ) as response:
                if response.status >= 400:
                    raise http_error(response.status, await response.read(), response.headers)
                if "text/event-stream" not in response.headers.get("Content-Type", ""):
                    return json.loads(await response.read())  # answered whole anyway
                async for raw_line in response.content:
                    wrote = assembler.feed_line(raw_line.decode("utf-8", "replace").strip())
                    if wrote and on_progress is not None:
                        await on_progress(assembler.chars)
                    if assembler.done:
                        break
        except TimeoutError as exc:
            raise TransientModelError(f"request timed out ({self._timeout.total} s)") from exc
        except aiohttp.ClientError as exc:
            raise TransientModelError(f"connection error ({type(exc).__name__}: {exc})") from exc
        except ValueError as exc:
            raise ModelUnavailable(f"model server did not answer with JSON: {exc}") from None
        except StreamError as exc:
            raise http_error(400, json.dumps({"error": exc.body}).encode(), {}) from None
        return assembler.body()

    async def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """One exchange with the server: its JSON answer, or our error for what went wrong."""
        try:
            async with self._http().request(
                method, self._url + path, json=body, params=self._query, proxy=self._proxy
            ) as response:
                raw = await response.read()
                status, headers = response.status, response.headers
        except TimeoutError as exc:
            raise TransientModelError(f"request timed out ({self._timeout.total} s)") from exc
        except aiohttp.ClientError as exc:  # refused, reset, DNS, a malformed answer
            raise TransientModelError(f"connection error ({type(exc).__name__}: {exc})") from exc
        if status >= 400:
            raise http_error(status, raw, headers)
        try:
            return json.loads(raw)
        except ValueError:
            text = raw.decode("utf-8", "replace")
            raise ModelUnavailable(
                f"model server did not answer with JSON: {text[:200]!r}"
            ) from None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:  # made in the loop that uses it
            self._session = aiohttp.ClientSession(
                headers=self._headers,
                timeout=self._timeout,
                # The workers' pools bound the calls in flight (MAKA_BOT_CONCURRENCY, up to
                # 256, beside task turns and discovery); aiohttp's default of 100
                # connections would queue the rest here, unseen, as model latency.
                connector=aiohttp.TCPConnector(limit=0),
            )
        return self._session

    def wire(self) -> tuple[aiohttp.ClientSession, str, str | None, dict[str, str]]:
        """The session (its headers carry the key), base URL, proxy and query (Azure's
        api-version) this provider talks over: for probes (`bot.llm.probe`) that ask the
        server what `complete` does not."""
        return self._http(), self._url, self._proxy, dict(self._query)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


def _has_reasoning_field(response: Any) -> bool:
    try:
        return isinstance(response["choices"][0]["message"].get("reasoning_content"), str)
    except (KeyError, IndexError, TypeError, AttributeError):
        return False
