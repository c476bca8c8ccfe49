"""Our messages and tools as chat-completions JSON, and a chat-completions answer as a
`Completion`, tolerant of the gaps OpenAI-compatible servers leave (no usage, no tool-call
type, null content) and keeping the model's reasoning out of the answer's text."""

from __future__ import annotations

import logging
import urllib.parse
from collections.abc import Sequence
from typing import Any

from bot.llm.reasoning import join_reasoning, split_reasoning
from bot.llm.tokens import estimate_tokens
from bot.llm.types import Completion, Message, ModelUnavailable, ToolCall, ToolSpec, Usage

log = logging.getLogger(__name__)

# Azure OpenAI's GA data-plane version; MAKA_MODEL_API_VERSION overrides it.
# https://learn.microsoft.com/en-us/azure/ai-services/openai/reference
AZURE_API_VERSION = "2024-10-21"


def is_azure(base_url: str) -> bool:
    host = urllib.parse.urlsplit(base_url).hostname or ""
    return host.endswith(".openai.azure.com") or "/openai/deployments/" in base_url


def azure_url(base_url: str, deployment: str) -> str:
    """The deployment's URL: `base_url` may be the resource
    (`https://x.openai.azure.com`) or already name the deployment."""
    url = base_url.rstrip("/")
    if "/openai/deployments/" in url:
        return url
    return f"{url}/openai/deployments/{deployment}"


def tool_to_openai(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }


def message_to_openai(message: Message, *, echo_reasoning: bool = False) -> dict[str, Any]:
    """`echo_reasoning`: hand an assistant message's reasoning back as `reasoning_content`
    (only to endpoints that sent it: DeepSeek's thinking mode rejects a tool-calling turn
    without it; others may reject the unknown field)."""
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
        if echo_reasoning and message.reasoning:
            out["reasoning_content"] = message.reasoning
        if message.name:
            out["name"] = message.name
        return out
    if role in ("system", "user"):
        out = {"role": role, "content": message.content or ""}
        if message.name:
            out["name"] = message.name
        return out
    raise ValueError(f"unknown message role {role!r}")


def completion_from_openai(
    response: Any, default_model: str, sent: Sequence[Message] = ()
) -> Completion:
    """Build a `Completion` from a chat-completions JSON body. Usage the server left out is
    estimated from `sent` and the answer with the one tokenizer, and marked so."""
    if not isinstance(response, dict):
        raise ModelUnavailable(f"model server did not answer with a completion: {response!r:.200}")
    choices = response.get("choices")
    if not choices or not isinstance(choices, list):
        raise ModelUnavailable("model server returned no choices")
    choice = choices[0] if isinstance(choices[0], dict) else {}
    message = choice.get("message")
    if not isinstance(message, dict):
        raise ModelUnavailable("model server returned a choice without a message")
    tool_calls: list[ToolCall] = []
    for index, raw_call in enumerate(message.get("tool_calls") or []):
        function = raw_call.get("function") if isinstance(raw_call, dict) else None
        if not isinstance(function, dict):  # a non-function ("custom") tool call: never declared
            log.warning("ignoring non-function tool call %r", raw_call)
            continue
        call_id = raw_call.get("id") or f"call_{index}"
        tool_calls.append(
            ToolCall.from_raw(call_id, function.get("name") or "", function.get("arguments", ""))
        )
    content = message.get("content")
    text, thought = split_reasoning(content if isinstance(content, str) else None)
    fields = [message.get(key) for key in ("reasoning_content", "reasoning")]
    reasoning = join_reasoning(*(f for f in fields if isinstance(f, str)), thought)
    return Completion(
        text=text,
        tool_calls=tool_calls,
        usage=_usage(response.get("usage"), sent, text, reasoning, tool_calls),
        model=response.get("model") or default_model,
        finish_reason=choice.get("finish_reason"),
        reasoning=reasoning,
    )


def _usage(
    reported: Any,
    sent: Sequence[Message],
    text: str | None,
    reasoning: str | None,
    calls: list[ToolCall],
) -> Usage:
    counted = isinstance(reported, dict) and any(
        reported.get(key) for key in ("prompt_tokens", "completion_tokens")
    )
    if counted:
        return Usage(
            input_tokens=int(reported.get("prompt_tokens") or 0),
            output_tokens=int(reported.get("completion_tokens") or 0),
        )
    written = [text or "", reasoning or ""] + [c.name + c.raw_arguments for c in calls]
    read = [m.content or "" for m in sent] + [
        c.arguments_json() for m in sent for c in m.tool_calls
    ]
    return Usage(estimate_tokens(*read), estimate_tokens(*written), estimated=True)
