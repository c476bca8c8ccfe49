"""The one entry point for model calls: `ModelClient.complete`.

Providers (`ModelProvider`) speak to a backend; `ModelClient` wraps any provider, measures the
latency of each call and records every call, successful or not, through a `CallRecorder`.
A client may have a fallback provider: asked once with the same request when the primary
stays unavailable (`ModelUnavailable`, after its own retries) or does not know the model
(404); its call is recorded as a fallback call. A request the server refused for what it
asked (any other 4xx) is not sent elsewhere: it would be refused there too.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from bot.llm.types import Completion, Message, ModelRequestRejected, ModelUnavailable, ToolSpec

log = logging.getLogger(__name__)

# Told how many characters the model has written so far, while a streamed answer arrives.
ProgressCallback = Callable[[int], Awaitable[None]]

_MAX_ERROR_CHARS = 500


class ModelProvider(Protocol):
    name: str

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> Completion: ...


@dataclass(frozen=True, slots=True)
class ModelCallRecord:
    """One row of the `model_calls` table."""

    purpose: str
    model: str
    input_tokens: int
    output_tokens: int
    latency_ms: int
    error: str | None
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    usage_estimated: bool = False  # the endpoint reported no usage (Usage.estimated)
    fallback: bool = False  # answered (or not) by the fallback model
    conversation_id: int | None = None  # the conversation the call was made for, if one


class CallRecorder(Protocol):
    async def record(self, call: ModelCallRecord) -> None: ...


class NullRecorder:
    async def record(self, call: ModelCallRecord) -> None:
        return None


class MemoryRecorder:
    def __init__(self) -> None:
        self.calls: list[ModelCallRecord] = []

    async def record(self, call: ModelCallRecord) -> None:
        self.calls.append(call)


def describe_error(exc: BaseException) -> str:
    text = str(exc)
    described = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return described[:_MAX_ERROR_CHARS]


def falls_back(exc: BaseException) -> bool:
    """Whether a primary's failure sends the request to the fallback model."""
    if isinstance(exc, ModelUnavailable):
        return True
    # OpenAI answers 404 model_not_found, Azure 404 DeploymentNotFound: this endpoint has no
    # such model, another may.
    return isinstance(exc, ModelRequestRejected) and exc.status_code == 404


class ModelClient:
    def __init__(
        self,
        provider: ModelProvider,
        recorder: CallRecorder,
        *,
        fallback: ModelProvider | None = None,
    ) -> None:
        self.provider = provider
        self.recorder = recorder
        self.fallback = fallback

    @property
    def model(self) -> str:
        return self.provider.name

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        purpose: str,
        conversation_id: int | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> Completion:
        """Run one completion. Raises `ModelError` subclasses (and re-raises cancellation).
        `on_progress` is passed to a provider that says it `reports_progress` (one that
        streams); others never call it.

        Every call is recorded: on success with the provider's token usage, on failure with
        zero tokens and the error text. A failing recorder is logged, never propagated.
        A fallback's failure is raised as the call's failure."""
        call = _Call(
            messages, tools, purpose, conversation_id, max_tokens, temperature, on_progress
        )
        try:
            return await self._ask(self.provider, call, fallback=False)
        except Exception as exc:
            if self.fallback is None or not falls_back(exc):
                raise
            log.warning(
                "model %r failed (%s); asking the fallback model %r (purpose=%s)",
                self.provider.name,
                describe_error(exc),
                self.fallback.name,
                purpose,
            )
            return await self._ask(self.fallback, call, fallback=True)

    async def _ask(self, provider: ModelProvider, call: _Call, *, fallback: bool) -> Completion:
        created_at = datetime.now(UTC)
        started = time.monotonic()

        async def record(
            model: str, usage: tuple[int, int], error: str | None, estimated: bool = False
        ) -> None:
            await self._record(
                ModelCallRecord(
                    purpose=call.purpose,
                    model=model,
                    input_tokens=usage[0],
                    output_tokens=usage[1],
                    latency_ms=max(0, round((time.monotonic() - started) * 1000)),
                    error=error,
                    created_at=created_at,
                    usage_estimated=estimated,
                    fallback=fallback,
                    conversation_id=call.conversation_id,
                )
            )

        try:
            if call.on_progress is None or not getattr(provider, "reports_progress", False):
                completion = await provider.complete(
                    call.messages,
                    call.tools,
                    max_tokens=call.max_tokens,
                    temperature=call.temperature,
                )
            else:
                completion = await provider.complete(  # type: ignore[call-arg]
                    call.messages,
                    call.tools,
                    max_tokens=call.max_tokens,
                    temperature=call.temperature,
                    on_progress=call.on_progress,
                )
        except asyncio.CancelledError:
            await record(provider.name, (0, 0), "cancelled")
            raise
        except Exception as exc:
            await record(provider.name, (0, 0), describe_error(exc))
            raise
        usage = (completion.usage.input_tokens, completion.usage.output_tokens)
        await record(completion.model or provider.name, usage, None, completion.usage.estimated)
        return completion

    async def _record(self, record: ModelCallRecord) -> None:
        purpose, model = record.purpose, record.model
        try:
            await self.recorder.record(record)
        except Exception:
            log.exception("failed to record model call (purpose=%s, model=%s)", purpose, model)

    async def aclose(self) -> None:
        """Close the providers (a roster of clients sharing them closes each once instead)."""
        for provider in (self.provider, self.fallback):
            close = getattr(provider, "aclose", None)
            if close is not None:
                await close()


@dataclass(frozen=True, slots=True)
class _Call:
    messages: Sequence[Message]
    tools: Sequence[ToolSpec]
    purpose: str
    conversation_id: int | None
    max_tokens: int | None
    temperature: float | None
    on_progress: ProgressCallback | None
