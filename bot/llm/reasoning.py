"""Reasoning text kept out of answers. Endpoints return it beside the answer
(`reasoning_content`: DeepSeek, Qwen, GLM, Doubao; `reasoning`: vLLM, Ollama, OpenRouter) or
inside it as `<think>...</think>` (local servers serving DeepSeek-R1, QwQ, Qwen3 without a
reasoning parser). A leading `<think>` with no end means the answer never started (the output
was cut while thinking, or the chat template opened the block itself and only the close
arrives): all of it is reasoning, none of it an answer."""

from __future__ import annotations

import re

_BLOCK = re.compile(r"<think(?:ing)?>(.*?)</think(?:ing)?>", re.DOTALL | re.IGNORECASE)
_OPEN = re.compile(r"^\s*<think(?:ing)?>", re.IGNORECASE)
_CLOSE = re.compile(r"</think(?:ing)?>", re.IGNORECASE)


def split_reasoning(text: str | None) -> tuple[str | None, str | None]:
    """(the answer, the reasoning) of a model's `content`; either may be None."""
    if not text or "think" not in text.lower():
        return text, None
    thoughts = [m.strip() for m in _BLOCK.findall(text)]
    rest = _BLOCK.sub("", text)
    opened = _OPEN.search(rest)
    if opened:  # never closed: everything after it is thinking
        thoughts.append(rest[opened.end() :].strip())
        rest = ""
    closed = _CLOSE.search(rest)
    if closed:  # the template opened the block; only its end is in the output
        thoughts.insert(0, rest[: closed.start()].strip())
        rest = rest[closed.end() :]
    answer = rest.lstrip() if rest.strip() else None
    reasoning = "\n\n".join(t for t in thoughts if t) or None
    return answer, reasoning


def join_reasoning(*parts: str | None) -> str | None:
    return "\n\n".join(p for p in parts if p) or None
