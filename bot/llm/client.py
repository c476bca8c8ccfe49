"""The one entry point for model calls: `ModelClient.complete`.

Providers (`ModelProvider`) speak to a backend; `ModelClient` wraps any provider, measures the
latency of each call and records every call, successful or not, through a `CallRecorder`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

from bot.llm.types import Completion, Message, ToolSpec

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


class ModelClient:
    def __init__(self, provider: ModelProvider, recorder: CallRecorder) -> None:
        self.provider = provider
        self.recorder = recorder

    @property
    def model(self) -> str:
        return self.provider.name

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        purpose: str,
        max_tokens: int | None = None,
        temperature: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> Completion:
        """Run one completion. Raises `ModelError` subclasses (and re-raises cancellation).
        `on_progress` is passed to a provider that says it `reports_progress` (one that
        streams); others never call it.

        Every call is recorded: on success with the provider's token usage, on failure with
        zero tokens and the error text. A failing recorder is logged, never propagated."""
        created_at = datetime.now(UTC)
        started = time.monotonic()
        try:
            if on_progress is None or not getattr(self.provider, "reports_progress", False):
                completion = await self.provider.complete(
                    messages, tools, max_tokens=max_tokens, temperature=temperature
                )
            else:
                completion = await self.provider.complete(  # type: ignore[call-arg]
                    messages,
                    tools,
                    max_tokens=max_tokens,
                    temperature=temperature,
                    on_progress=on_progress,
                )
        except asyncio.CancelledError:
            await self._record(purpose, self.provider.name, 0, 0, started, "cancelled", created_at)
            raise
        except Exception as exc:
            await self._record(
                purpose, self.provider.name, 0, 0, started, describe_error(exc), created_at
            )
            raise
        await self._record(
            purpose,
            completion.model or self.provider.name,
            completion.usage.input_tokens,
            completion.usage.output_tokens,
            started,
            None,
            created_at,
            completion.usage.estimated,
        )
        return completion

    async def _record(
        self,
        purpose: str,
        model: str,
        input_tokens: int,
        output_tokens: int,
        started: float,
        error: str | None,
        created_at: datetime,
        usage_estimated: bool = False,
    ) -> None:
        latency_ms = max(0, round((time.monotonic() - started) * 1000))
        record = ModelCallRecord(
            purpose=purpose,
            model=model,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            latency_ms=latency_ms,
            error=error,
            created_at=created_at,
            usage_estimated=usage_estimated,
        )
        try:
            await self.recorder.record(record)
        except Exception:
            log.exception("failed to record model call (purpose=%s, model=%s)", purpose, model)

    async def aclose(self) -> None:
        close = getattr(self.provider, "aclose", None)
        if close is not None:
            await close()
