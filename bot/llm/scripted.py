"""`ScriptedProvider`: a deterministic `ModelProvider` for tests.

    provider = ScriptedProvider([
        ScriptedProvider.tool_call("send_user", {"text": "hi"}),
        ScriptedProvider.text("done"),
    ])

Each call consumes the next step: a `Completion` (returned as is), a planned reply from
`text()` / `tool_call()` / `tool_calls()` (usage estimated from the actual input, ~4 characters a
token), an exception (raised), or a callable `(messages, tools) -> Completion` (may be async) to
react to the input. Every request is kept in `.requests` as `(messages, tools)`.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, cast

from bot.llm.tokens import estimate_tokens
from bot.llm.types import Completion, Message, ToolCall, ToolSpec, Usage

Responder: TypeAlias = Callable[
    [list[Message], list[ToolSpec]],
    "Completion | PlannedReply | Awaitable[Completion] | Awaitable[PlannedReply]",
]


class ScriptExhausted(AssertionError):
    """The code under test made more model calls than the script planned."""


@dataclass(frozen=True, slots=True)
class PlannedReply:
    """A reply whose usage and tool-call ids are filled in when it is played."""

    text: str | None = None
    calls: tuple[tuple[str, dict[str, Any] | str], ...] = ()
    finish_reason: str | None = None
    call_ids: tuple[str | None, ...] = field(default=())


Step: TypeAlias = Completion | PlannedReply | BaseException | type[BaseException] | Responder


def _message_texts(message: Message) -> list[str]:
    texts = [message.content or ""]
    for call in message.tool_calls:
        texts += [call.name, call.arguments_json()]
    return texts


def estimate_usage(
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    text: str | None,
    calls: Sequence[ToolCall],
) -> Usage:
    inputs = [piece for m in messages for piece in _message_texts(m)]
    for t in tools:
        inputs += [t.name, t.description, json.dumps(t.parameters, ensure_ascii=False)]
    outputs = [text or ""]
    for c in calls:
        outputs += [c.name, c.arguments_json()]
    return Usage(estimate_tokens(*inputs), estimate_tokens(*outputs))


class ScriptedProvider:
    def __init__(self, steps: Iterable[Step] = (), *, name: str = "scripted") -> None:
        self.name = name
        self._steps: list[Step] = list(steps)
        self._played = 0
        self._call_counter = 0
        self.requests: list[tuple[list[Message], list[ToolSpec]]] = []
        self.options: list[dict[str, Any]] = []

    # --- building the script -------------------------------------------------------------
    @staticmethod
    def text(text: str, *, finish_reason: str = "stop") -> PlannedReply:
        return PlannedReply(text=text, finish_reason=finish_reason)

    @staticmethod
    def tool_call(
        name: str,
        arguments: dict[str, Any] | str | None = None,
        *,
        id: str | None = None,
        text: str | None = None,
    ) -> PlannedReply:
        """One tool call. `arguments` may be a raw string (e.g. invalid JSON) to test parsing."""
        return PlannedReply(
            text=text,
            calls=((name, {} if arguments is None else arguments),),
            finish_reason="tool_calls",
            call_ids=(id,),
        )

    @staticmethod
    def tool_calls(
        *calls: tuple[str, dict[str, Any] | str], text: str | None = None
    ) -> PlannedReply:
        return PlannedReply(
            text=text, calls=tuple(calls), finish_reason="tool_calls", call_ids=(None,) * len(calls)
        )

    def add(self, *steps: Step) -> None:
        self._steps.extend(steps)

    @property
    def remaining(self) -> int:
        return len(self._steps) - self._played

    def assert_exhausted(self) -> None:
        if self.remaining:
            raise AssertionError(f"{self.remaining} scripted model step(s) were never used")

    # --- ModelProvider -------------------------------------------------------------------
    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> Completion:
        seen_messages, seen_tools = list(messages), list(tools)
        self.requests.append((seen_messages, seen_tools))
        self.options.append({"max_tokens": max_tokens, "temperature": temperature})
        if self._played >= len(self._steps):
            last_user = next((m.content for m in reversed(seen_messages) if m.role == "user"), None)
            raise ScriptExhausted(
                f"scripted provider ran out after {len(self._steps)} step(s); unexpected call "
                f"#{len(self.requests)} (last user message: {last_user!r})"
            )
        step = self._steps[self._played]
        self._played += 1

        if isinstance(step, Completion):
            return step
        if isinstance(step, PlannedReply):
            return self._play(step, seen_messages, seen_tools)
        if isinstance(step, BaseException):
            raise step
        if isinstance(step, type) and issubclass(step, BaseException):
            raise step()
        responder = cast(Responder, step)
        result = responder(seen_messages, seen_tools)
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, PlannedReply):
            return self._play(result, seen_messages, seen_tools)
        if not isinstance(result, Completion):
            raise TypeError(f"scripted responder returned {type(result).__name__}, not Completion")
        return result

    def _play(
        self, plan: PlannedReply, messages: list[Message], tools: list[ToolSpec]
    ) -> Completion:
        calls: list[ToolCall] = []
        for index, (name, arguments) in enumerate(plan.calls):
            self._call_counter += 1
            given_id = plan.call_ids[index] if index < len(plan.call_ids) else None
            call_id = given_id or f"call_{self._call_counter}"
            if isinstance(arguments, str):
                calls.append(ToolCall.from_raw(call_id, name, arguments))
            else:
                raw = json.dumps(arguments, ensure_ascii=False)
                calls.append(ToolCall(call_id, name, dict(arguments), raw))
        return Completion(
            text=plan.text,
            tool_calls=calls,
            usage=estimate_usage(messages, tools, plan.text, calls),
            model=self.name,
            finish_reason=plan.finish_reason,
        )
