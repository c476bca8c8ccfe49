"""Provider-neutral value types for model calls: messages and tool schemas in; text, tool calls
and token usage out. Nothing here knows about any vendor SDK."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from bot.llm.tool_json import repair_json_object

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool the model may call. `parameters` is a JSON schema (an `object` schema)."""

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call requested by the model.

    `raw_arguments` is the string the model produced. When it is not a JSON object, `arguments`
    is `{}` and `parse_error` says why; the call is still returned so that the caller can tell the
    model its arguments were malformed instead of crashing.
    """

    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str = ""
    parse_error: str | None = None

    @property
    def ok(self) -> bool:
        return self.parse_error is None

    @classmethod
    def from_raw(cls, id: str, name: str, raw_arguments: str | None) -> ToolCall:
        raw = raw_arguments or ""
        arguments, error = parse_arguments(raw)
        return cls(id=id, name=name, arguments=arguments, raw_arguments=raw, parse_error=error)

    def arguments_json(self) -> str:
        """The arguments as they should be sent back to a model (the raw text wins)."""
        if self.raw_arguments:
            return self.raw_arguments
        return json.dumps(self.arguments, ensure_ascii=False)


def parse_arguments(raw: str) -> tuple[dict[str, Any], str | None]:
    """Parse tool-call arguments; never raises. Empty text means "no arguments". The common
    slips of real models (a code fence, text after the object, single quotes, a trailing
    comma) are repaired (`bot.llm.tool_json`); what cannot be repaired is reported."""
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except ValueError as exc:
        repaired = repair_json_object(raw)
        if repaired is None:
            return {}, f"arguments are not valid JSON: {exc}"
        value = repaired
    except RecursionError:  # json.loads recurses per nesting level
        return {}, "arguments are nested too deeply"
    if not isinstance(value, dict):
        return {}, f"arguments are not a JSON object (got {type(value).__name__})"
    return value, None


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    # The model's reasoning (DeepSeek's, Qwen's, GLM's `reasoning_content`) on an assistant
    # message: handed back to the endpoint (DeepSeek's thinking mode requires it on a turn
    # with tool calls, else 400), never shown to a user nor stored as the answer.
    reasoning: str | None = None

    @classmethod
    def system(cls, content: str) -> Message:
        return cls("system", content)

    @classmethod
    def user(cls, content: str, *, name: str | None = None) -> Message:
        return cls("user", content, name=name)

    @classmethod
    def assistant(cls, content: str | None, tool_calls: list[ToolCall] | None = None) -> Message:
        return cls("assistant", content, tool_calls=list(tool_calls or []))

    @classmethod
    def tool(cls, tool_call_id: str, content: str, *, name: str | None = None) -> Message:
        return cls("tool", content, tool_call_id=tool_call_id, name=name)


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    # The endpoint reported no usage (local servers, some streams): the counts are the one
    # tokenizer's estimate (bot.llm.tokens), and shown as such.
    estimated: bool = False


@dataclass(frozen=True, slots=True)
class Completion:
    text: str | None
    tool_calls: list[ToolCall]
    usage: Usage
    model: str
    finish_reason: str | None
    # Reasoning text the endpoint returned beside the answer (`reasoning_content`) or inside
    # it (`<think>` blocks): kept apart from `text`, never sent to a user.
    reasoning: str | None = None

    def as_message(self) -> Message:
        """The assistant message to append to the conversation history."""
        return Message("assistant", self.text, list(self.tool_calls), reasoning=self.reasoning)


class ModelError(Exception):
    """Base of every error raised by the model layer."""


class ModelUnavailable(ModelError):
    """The model could not be reached or kept failing: retries exhausted, timeout, connection
    error, 5xx/429 that did not clear, or a response that could not be understood."""


class ModelRequestRejected(ModelError):
    """The server refused the request (a 4xx other than 429); retrying will not help.

    `status_code` is the HTTP status, `message` the server's own explanation;
    `str(exc)` is "HTTP <status>: <message>"."""

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(f"HTTP {status_code}: {message}" if status_code else message)
        self.message = message
        self.status_code = status_code


class ModelContextTooLong(ModelRequestRejected):
    """The endpoint said the input is longer than the model's context window."""


class ModelToolsUnsupported(ModelRequestRejected):
    """The endpoint said this model cannot call tools (Ollama's "does not support tools",
    llama.cpp without --jinja, ...): every turn that offers tools fails the same way."""


class ModelRefused(ModelError):
    """The endpoint's content filter blocked the request or the answer (OpenAI/Azure
    `content_filter`, Qwen `data_inspection_failed`, GLM 1301, Ark `SensitiveContent*`...).
    Not retried: the same input is refused again."""


class ModelNotConfigured(ModelError):
    """No model endpoint is configured."""
