"""Repair of the common slips models make in tool-call arguments, so a call that merely
looks wrong still runs: a Markdown code fence around the object, prose after (or before) it,
single-quoted strings, a trailing comma. Anything else stays an error: the model is asked
again (bot.llm.recovery), never guessed at."""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def repair_json_object(raw: str) -> dict[str, Any] | None:
    """The JSON object `raw` meant, or None when it is not one of the known slips."""
    text = raw.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    start = text.find("{")
    if start < 0:
        return None
    for candidate in (text[start:], _single_to_double(text[start:])):
        value = _first_object(_TRAILING_COMMA.sub(r"\1", candidate))
        if value is not None:
            return value
    return None


def _first_object(text: str) -> dict[str, Any] | None:
    """The object at the start of `text`, ignoring what follows it."""
    try:
        value, _end = json.JSONDecoder().raw_decode(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _single_to_double(text: str) -> str:
    """Python-style quoting to JSON: single-quoted strings become double-quoted ones (a
    double quote inside them escaped); double-quoted strings are left alone."""
    out: list[str] = []
    quote: str | None = None
    escaped = False
    for char in text:
        if quote is None:
            if char in "'\"":
                quote = char
                out.append('"')
            else:
                out.append(char)
            continue
        if escaped:
            escaped = False
            out.append("'" if char == "'" and quote == "'" else "\\" + char)
            continue
        if char == "\\":
            escaped = True
            continue
        if char == quote:
            quote = None
            out.append('"')
        elif char == '"' and quote == "'":
            out.append('\\"')
        else:
            out.append(char)
    return "".join(out)
