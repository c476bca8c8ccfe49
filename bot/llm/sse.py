"""Server-sent chat-completion chunks (`stream: true`) put back together into the body a
non-streaming call returns, so one reader (`completion_from_openai`) serves both.

Each `data:` line holds a `chat.completion.chunk`: `choices[0].delta` carries fragments of
`content`, `reasoning_content` (DeepSeek, Qwen, GLM, Doubao) or `reasoning` (vLLM, Ollama),
and `tool_calls` addressed by `index` (the first fragment has the id and name, later ones
only pieces of `arguments`); the last choice chunk has `finish_reason`; with
`stream_options: {"include_usage": true}` a final chunk with empty `choices` has `usage`;
`data: [DONE]` ends the stream.
https://platform.openai.com/docs/api-reference/chat-streaming
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class _CallParts:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class StreamError(Exception):
    """An error object sent inside the stream instead of a chunk."""

    def __init__(self, body: Any) -> None:
        super().__init__(str(body))
        self.body = body


@dataclass
class StreamAssembler:
    model: str | None = None
    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    reasoning_key: str = "reasoning_content"  # or vLLM's and Ollama's `reasoning`
    calls: dict[int, _CallParts] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    done: bool = False
    chars: int = 0  # of everything the model has written so far (progress)

    def feed_line(self, line: str) -> bool:
        """Take one line of the stream; True when it added something the model wrote."""
        if not line.startswith("data:"):
            return False  # blank separators, `event:`/`id:` fields, `:` keep-alive comments
        data = line[5:].strip()
        if data == "[DONE]":
            self.done = True
            return False
        if not data:
            return False
        try:
            chunk = json.loads(data)
        except ValueError:
            return False
        if not isinstance(chunk, dict):
            return False
        if "error" in chunk and not chunk.get("choices"):
            raise StreamError(chunk["error"])
        return self.feed(chunk)

    def feed(self, chunk: dict[str, Any]) -> bool:
        self.model = self.model or chunk.get("model")
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        before = self.chars
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            for key, sink in (
                ("content", self.content),
                ("reasoning_content", self.reasoning),
                ("reasoning", self.reasoning),
            ):
                piece = delta.get(key)
                if isinstance(piece, str) and piece:
                    if sink is self.reasoning:
                        self.reasoning_key = key
                    sink.append(piece)
                    self.chars += len(piece)
            for raw in delta.get("tool_calls") or []:
                self._feed_call(raw)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        return self.chars > before

    def _feed_call(self, raw: Any) -> None:
        if not isinstance(raw, dict):
            return
        parts = self.calls.setdefault(int(raw.get("index") or 0), _CallParts())
        parts.id = parts.id or raw.get("id") or ""
        function = raw.get("function") or {}
        parts.name = parts.name or function.get("name") or ""
        piece = function.get("arguments")
        if isinstance(piece, str):
            parts.arguments.append(piece)
            self.chars += len(piece)

    def body(self) -> dict[str, Any]:
        """The assembled answer, shaped like a non-streaming response."""
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.content) or None}
        if self.reasoning:
            message[self.reasoning_key] = "".join(self.reasoning)
        if self.calls:
            message["tool_calls"] = [
                {
                    "id": parts.id or f"call_{index}",
                    "type": "function",
                    "function": {"name": parts.name, "arguments": "".join(parts.arguments)},
                }
                for index, parts in sorted(self.calls.items())
            ]
        body: dict[str, Any] = {
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish_reason}],
        }
        if self.usage is not None:
            body["usage"] = self.usage
        return body
