"""A provider for any OpenAI-compatible chat-completions endpoint (OpenAI, DeepSeek, vLLM,
Ollama, OpenRouter, ...).

The SDK's own retries are switched off (`max_retries=0`): `bot.retry.retrying` is the one
retry policy. Retried: 429, 408, 5xx, timeouts and connection errors. Not retried: every other
4xx (raised as `ModelRequestRejected` with the server's message), a 429 that means "out of
quota", and a 429 whose Retry-After is longer than `max_wait`.
"""

from __future__ import annotations

import email.utils
import logging
import math
import time
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, Literal, TypeVar

import openai
from openai.types.chat import ChatCompletion

from bot.llm.types import (
    Completion,
    Message,
    ModelRequestRejected,
    ModelUnavailable,
    ToolCall,
    ToolSpec,
    Usage,
)
from bot.retry import retrying

log = logging.getLogger(__name__)

_T = TypeVar("_T")

# 429 bodies with these codes mean "billing / quota", which no amount of waiting fixes.
_QUOTA_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached"})


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


def _server_message(exc: openai.APIStatusError) -> str:
    """The server's own explanation: `error.message` of an OpenAI-style body if present.

    The SDK unwraps `{"error": {...}}` so `exc.body` is the inner dict; `exc.message` is
    "Error code: 400 - <message>" (or just "Error code: 400" for a non-JSON body)."""
    body = exc.body
    if isinstance(body, dict):
        message = body.get("message")
        if isinstance(message, str) and message:
            return message
    if isinstance(body, str) and body.strip():
        return body.strip()[:300]
    return exc.message


def _error_code(exc: openai.APIStatusError) -> str | None:
    body = exc.body
    if isinstance(body, dict):
        for key in ("code", "type"):
            value = body.get(key)
            if isinstance(value, str) and value in _QUOTA_CODES:
                return value
    return exc.code


def translate_error(exc: openai.OpenAIError) -> Exception:
    """Map an SDK exception to a `TransientModelError` (retry) or a final `ModelError`."""
    if isinstance(exc, openai.APITimeoutError):  # subclass of APIConnectionError: check first
        return TransientModelError(f"request timed out: {exc}")
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        detail = f" ({type(cause).__name__}: {cause})" if cause else ""
        return TransientModelError(f"connection error{detail}")
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        message = _server_message(exc)
        if status == 429:
            code = _error_code(exc)
            if code in _QUOTA_CODES:
                return ModelRequestRejected(f"({code}) {message}", status_code=status)
            return TransientModelError(
                f"HTTP 429: {message}",
                status_code=status,
                retry_after=parse_retry_after(exc.response.headers),
            )
        if status == 408 or status >= 500:
            return TransientModelError(
                f"HTTP {status}: {message}",
                status_code=status,
                retry_after=parse_retry_after(exc.response.headers),
            )
        return ModelRequestRejected(message, status_code=status)
    # APIResponseValidationError and anything else the SDK may raise: the server answered,
    # but not with something we can use. Retrying would not change that.
    return ModelUnavailable(f"unusable response from model server: {exc}")


def tool_to_openai(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }


def message_to_openai(message: Message) -> dict[str, Any]:
    role = message.role
    if role == "tool":
        if not message.tool_call_id:
            raise ValueError("a tool message needs tool_call_id")
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id,
            "content": message.content or "",
        }
    if role == "assistant":
        out: dict[str, Any] = {"role": "assistant", "content": message.content}
        if message.tool_calls:
            out["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_json()},
                }
                for call in message.tool_calls
            ]
        elif message.content is None:
            out["content"] = ""
        if message.name:
            out["name"] = message.name
        return out
    if role in ("system", "user"):
        out = {"role": role, "content": message.content or ""}
        if message.name:
            out["name"] = message.name
        return out
    raise ValueError(f"unknown message role {role!r}")


def completion_from_openai(response: Any, default_model: str) -> Completion:
    """Build a `Completion` from a parsed `ChatCompletion`, tolerating the gaps that
    OpenAI-compatible servers leave (no usage, no tool-call type, null content)."""
    if isinstance(response, str | bytes):  # the SDK hands back non-JSON bodies as text
        text = response if isinstance(response, str) else response.decode("utf-8", "replace")
        raise ModelUnavailable(f"model server did not answer with JSON: {text[:200]!r}")
    choices = getattr(response, "choices", None)
    if not choices:
        raise ModelUnavailable("model server returned no choices")
    choice = choices[0]
    message = getattr(choice, "message", None)
    if message is None:
        raise ModelUnavailable("model server returned a choice without a message")
    tool_calls: list[ToolCall] = []
    for index, raw_call in enumerate(getattr(message, "tool_calls", None) or []):
        function = getattr(raw_call, "function", None)
        if function is None:  # a non-function ("custom") tool call: we never declare those
            log.warning("ignoring non-function tool call %r", raw_call)
            continue
        call_id = getattr(raw_call, "id", None) or f"call_{index}"
        tool_calls.append(
            ToolCall.from_raw(
                call_id, getattr(function, "name", "") or "", getattr(function, "arguments", "")
            )
        )
    usage = getattr(response, "usage", None)
    return Completion(
        text=getattr(message, "content", None),
        tool_calls=tool_calls,
        usage=Usage(
            input_tokens=int(getattr(usage, "prompt_tokens", None) or 0),
            output_tokens=int(getattr(usage, "completion_tokens", None) or 0),
        ),
        model=getattr(response, "model", None) or default_model,
        finish_reason=getattr(choice, "finish_reason", None),
    )


class OpenAICompatibleProvider:
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
        self._client = openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout
        )

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
    ) -> Completion:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [message_to_openai(m) for m in messages],
        }
        if tools:
            body["tools"] = [tool_to_openai(t) for t in tools]
        if max_tokens is not None:
            body[self.max_tokens_param] = max_tokens
        if temperature is not None:
            body["temperature"] = temperature

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
                        response = await self._sdk(self._create(body))
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
        return completion_from_openai(response, self.model)

    async def check(self) -> str:
        """One-line health description. Tries `GET /models`; if the server has no such
        endpoint, makes a one-token completion instead. Single attempt, no retries.
        Raises `ModelUnavailable` / `ModelRequestRejected` on failure."""
        try:
            try:
                page = await self._sdk(self._client.models.list())
            except ModelRequestRejected as exc:
                if exc.status_code != 404:
                    raise
            else:
                ids = [str(getattr(m, "id", "")) for m in (getattr(page, "data", None) or [])]
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
            completion = completion_from_openai(await self._sdk(self._create(ping)), self.model)
        except TransientModelError as exc:
            raise ModelUnavailable(f"model server {self.base_url} unavailable: {exc}") from exc
        return (
            f"{self.base_url}: reachable (no /models endpoint), test completion by "
            f"{completion.model!r} ok"
        )

    async def _create(self, body: dict[str, Any]) -> ChatCompletion:
        # `chat.completions.create` first walks the request through the SDK's type-driven
        # transform, about 5 ms of CPU for a Bot turn's prompt and tools on every call (a
        # third of a turn's own work with a fast model). The body built here is plain JSON
        # already, so it goes to the same endpoint through the SDK's documented generic
        # `post`: the same auth header, errors, timeout and parsed `ChatCompletion`.
        return await self._client.post(
            "/chat/completions",
            body={**body, "stream": False},
            cast_to=ChatCompletion,
            options={"security": {"bearer_auth": True}},
        )

    @staticmethod
    async def _sdk(call: Awaitable[_T]) -> _T:
        """Await one SDK call, turning its exceptions into ours (see `translate_error`)."""
        try:
            return await call
        except openai.OpenAIError as exc:
            raise translate_error(exc) from exc
        except ValueError as exc:  # a 200 whose body claims JSON but is not
            raise ModelUnavailable(f"unusable response from model server: {exc}") from exc

    async def aclose(self) -> None:
        await self._client.close()
