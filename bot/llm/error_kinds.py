"""What an endpoint's error means, read from the codes and messages each provider family
documents (the stand-ins in tests/fakes/model_providers.py cite the pages). Only the kinds
the client acts on: the input is too long (shrink once and retry), the content filter said
no (an honest apology), streaming is not offered (ask again without it)."""

from __future__ import annotations

from typing import Any

# Error codes (the `code` or `type` of the error object) by kind.
_CONTEXT_CODES = frozenset(
    {
        "context_length_exceeded",  # OpenAI, Azure
        "1261",  # Zhipu GLM: prompt too long (from memory)
        "exceed_context_size_error",  # llama.cpp server
    }
)
_FILTER_CODES = frozenset(
    {
        "content_filter",  # Azure OpenAI, Moonshot (type)
        "content_policy_violation",  # OpenAI
        "data_inspection_failed",  # Qwen / DashScope
        "1301",  # Zhipu GLM
        "SensitiveContentDetected",  # Doubao / Volcengine Ark
        "InputTextSensitiveContentDetected",
        "OutputTextSensitiveContentDetected",
    }
)
# Phrases of the messages, lower-case, for servers that give no code.
_CONTEXT_PHRASES = (
    "maximum context length",  # OpenAI, DeepSeek, vLLM
    "context length",
    "context window",
    "exceeded model token limit",  # Moonshot
    "range of input length",  # Qwen / DashScope
    "exceed max message tokens",  # Doubao / Ark
    "exceeds the available context size",  # llama.cpp
    "prompt exceeds max length",  # GLM
    "input is too long",
)
_FILTER_PHRASES = (
    "content management policy",  # Azure
    "inappropriate content",  # Qwen
    "considered high risk",  # Moonshot
    "sensitive content",  # GLM, Ark
)


def codes_of(body: Any) -> set[str]:
    if not isinstance(body, dict):
        return set()
    found = {str(body[key]) for key in ("code", "type") if body.get(key) not in (None, "")}
    inner = body.get("innererror")  # Azure: {"code": "ResponsibleAIPolicyViolation"}
    if isinstance(inner, dict) and inner.get("code") == "ResponsibleAIPolicyViolation":
        found.add("content_filter")
    return found


def is_context_too_long(body: Any, message: str) -> bool:
    lowered = message.lower()
    return bool(codes_of(body) & _CONTEXT_CODES) or any(p in lowered for p in _CONTEXT_PHRASES)


def is_content_filter(body: Any, message: str) -> bool:
    lowered = message.lower()
    return bool(codes_of(body) & _FILTER_CODES) or any(p in lowered for p in _FILTER_PHRASES)


_NO_TOOLS_PHRASES = (
    # Ollama (HTTP 400, OpenAI-style error body on /v1), e.g.
    # {"error":{"message":"stablelm2:latest does not support tools","type":"api_error"}}:
    # https://github.com/ollama/ollama/issues/6027
    "does not support tools",
    # llama.cpp's server without --jinja: "tools param requires --jinja flag" (from memory)
    "requires --jinja",
    "tool use is not supported",
    "does not support function calling",
    # vLLM started without a tool parser (HTTP 400): "\"auto\" tool choice requires
    # --enable-auto-tool-choice and --tool-call-parser to be set" (vLLM's tool-calling docs,
    # https://docs.vllm.ai/en/latest/features/tool_calling.html; wording not confirmed here)
    '"auto" tool choice requires',
    "--enable-auto-tool-choice",
)


def is_tools_unsupported(message: str) -> bool:
    lowered = message.lower()
    return any(p.lower() in lowered for p in _NO_TOOLS_PHRASES)


def is_stream_unsupported(message: str) -> bool:
    lowered = message.lower()
    return "stream" in lowered and any(
        p in lowered for p in ("not support", "unsupported", "does not stream", "not allowed")
    )
