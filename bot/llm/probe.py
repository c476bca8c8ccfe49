"""`maka doctor`'s questions to a model endpoint, asked for real: does it answer, does it call
a tool when asked to, does it stream, what context window does it report.

The tool-calling request goes through the provider's own `complete` (the one mapping of the
wire); streaming and the context window are asked over the provider's session (`wire()`), as
the full client does not ask them.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import aiohttp

from bot.llm.client import describe_error
from bot.llm.openai_compat import OpenAICompatibleProvider, http_error
from bot.llm.tool_support import answered_without_tool, refused_tools, rejects_tools
from bot.llm.types import Message, ModelRequestRejected, ToolSpec

PROBE_TOOL = ToolSpec(
    "report_ready",
    "Report that you are ready. Call it whenever you are asked to.",
    {
        "type": "object",
        "properties": {"ready": {"type": "boolean", "description": "always true"}},
        "required": ["ready"],
    },
)
PROBE_PROMPT = [
    Message.system("You are being checked. Answer only by calling the tool report_ready."),
    Message.user("Call report_ready with ready=true now."),
]
# Room for a reasoning model's preamble before its call; the call itself is a few tokens.
PROBE_MAX_TOKENS = 256
# An SSE answer shows itself in its first lines: read no further than this.
STREAM_PEEK_BYTES = 64 * 1024

# Fields of a `GET /models` entry that give its context window, by who documents them:
# OpenRouter `context_length` (https://openrouter.ai/docs/api-reference/list-available-models),
# vLLM `max_model_len` (its ModelCard; not confirmed here), Groq `context_window`
# (https://console.groq.com/docs/models; Moonshot's listing may use it too, not confirmed).
CONTEXT_FIELDS = ("context_length", "max_model_len", "context_window")


@dataclass(frozen=True)
class Finding:
    ok: bool
    detail: str


@dataclass(frozen=True)
class ProbeReport:
    answers: Finding
    tools: Finding
    streams: Finding
    context: Finding


async def probe(provider: OpenAICompatibleProvider) -> ProbeReport:
    """The four answers; the questions are asked at once (each is bounded by the provider's
    timeout)."""
    (answers, tools), streams, context = await asyncio.gather(
        _tool_call(provider), _streams(provider), _context_window(provider)
    )
    return ProbeReport(answers, tools, streams, context)


async def _tool_call(provider: OpenAICompatibleProvider) -> tuple[Finding, Finding]:
    started = time.monotonic()
    try:
        completion = await provider.complete(
            PROBE_PROMPT, [PROBE_TOOL], max_tokens=PROBE_MAX_TOKENS
        )
    except ModelRequestRejected as exc:
        answered = Finding(True, f"{provider.base_url}: answered HTTP {exc.status_code}")
        if rejects_tools(exc):
            return answered, Finding(False, refused_tools(provider.model, exc))
        return Finding(False, f"{provider.base_url}: {exc}"), _not_asked()
    except Exception as exc:
        return Finding(False, f"{provider.base_url}: {describe_error(exc)[:300]}"), _not_asked()
    ms = round((time.monotonic() - started) * 1000)
    answered = Finding(True, f"{provider.base_url}: {completion.model!r} answered in {ms} ms")
    names = [call.name for call in completion.tool_calls]
    if PROBE_TOOL.name in names:
        return answered, Finding(True, f"calls tools ({PROBE_TOOL.name} was called)")
    if names:  # a call, just not the one asked for: tool calls work
        return answered, Finding(True, f"calls tools (called {', '.join(names)})")
    return answered, Finding(False, answered_without_tool(provider.model))


def _not_asked() -> Finding:
    return Finding(False, "not known: the endpoint did not answer the tool-calling request")


async def _streams(provider: OpenAICompatibleProvider) -> Finding:
    """Whether a `stream: true` request is answered as server-sent events (`data:` lines).
    Not streaming is no failure: replies then come whole."""
    http, url, proxy, query = provider.wire()
    body = {
        "model": provider.model,
        "messages": [{"role": "user", "content": "Say ok."}],
        provider.max_tokens_param: 8,
        "stream": True,
    }
    try:
        async with http.post(
            url + "/chat/completions",
            json=body,
            params=query,
            proxy=proxy,
            headers={"Accept": "text/event-stream"},
        ) as response:
            kind = response.headers.get("Content-Type", "")
            if response.status >= 400:
                said = http_error(response.status, await response.read(), response.headers)
                return Finding(True, f"does not stream ({said}); replies come whole")
            seen = 0
            while seen < STREAM_PEEK_BYTES:
                line = await response.content.readline()
                if not line:
                    break
                seen += len(line)
                text = line.decode("utf-8", "replace").strip()
                if text.startswith("data:"):
                    return Finding(True, "streams (answered a stream request with SSE data: lines)")
                if text and not text.startswith((":", "event:", "id:", "retry:")):
                    break  # a JSON answer, not events
    except Exception as exc:
        return Finding(True, f"not known ({describe_error(exc)[:300]}); replies come whole")
    return Finding(
        True, f"does not stream (answered {kind or 'no content type'}); replies come whole"
    )


async def _context_window(provider: OpenAICompatibleProvider) -> Finding:
    """The window the server reports for the model: its `GET /models` entry, else Ollama's
    `POST /api/show` (`model_info["<architecture>.context_length"]`,
    https://github.com/ollama/ollama/blob/main/docs/api.md#show-model-information)."""
    http, url, proxy, query = provider.wire()
    try:
        async with http.get(url + "/models", params=query, proxy=proxy) as response:
            page = await response.json(content_type=None) if response.status < 400 else None
        entry = _entry_for(page, provider.model)
        for name in CONTEXT_FIELDS:
            value = _positive_int(entry.get(name))
            if value is not None:
                return Finding(True, f"{value} tokens (GET /models {name})")
        if url.endswith("/v1"):  # Ollama's own API sits beside its OpenAI-compatible one
            show = url.removesuffix("/v1") + "/api/show"
            async with http.post(show, json={"model": provider.model}, proxy=proxy) as response:
                shown = await response.json(content_type=None) if response.status < 400 else None
            info = shown.get("model_info") if isinstance(shown, dict) else None
            for key, raw in (info or {}).items():
                value = _positive_int(raw)
                if key.endswith(".context_length") and value is not None:
                    return Finding(True, f"{value} tokens (Ollama /api/show {key})")
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        return Finding(True, f"not reported ({describe_error(exc)[:300]})")
    return Finding(True, "not reported by the endpoint")


def _entry_for(page: Any, model: str) -> dict[str, Any]:
    listing = page.get("data") if isinstance(page, dict) else None
    for entry in listing or []:
        if isinstance(entry, dict) and entry.get("id") == model:
            return entry
    return {}


def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = int(value)
    except ValueError:
        return None
    return number if number > 0 else None
