"""The one reader of JSON from outside: the Feishu webhook and long connection, and the
console's API (its messages and its login).

JSON is read with limits: a body nested deeper than any event, a number no float holds, or a
string the database cannot store (a NUL, a lone surrogate) is UnusableJson, before anything
tries to store it, and never a RecursionError. Over HTTP that is a 400 with a JSON error in
one line; a body larger than the server takes is aiohttp's 413.
"""

from __future__ import annotations

import json
import math
from typing import Any

from aiohttp import web

from storage.types import UNSTORABLE

MAX_DEPTH = 64  # events nest about 6 deep; far deeper is an attack, not an event
MAX_NUMBER_LENGTH = 400  # characters of one JSON number; Feishu's have a few dozen at most


class UnusableJson(ValueError):
    """Not a JSON object this service can keep; the text says why, in one line."""


def parse_json_object(raw: bytes | str) -> dict[str, Any]:
    """A JSON object that can be stored as it is; UnusableJson otherwise."""
    try:
        value = json.loads(raw, parse_int=_int, parse_float=_float, parse_constant=_refuse_constant)
    except RecursionError:
        raise UnusableJson(f"body is nested deeper than {MAX_DEPTH}") from None
    except UnusableJson:
        raise
    except (ValueError, UnicodeDecodeError):
        raise UnusableJson("body is not JSON") from None
    if not isinstance(value, dict):
        raise UnusableJson("body is not a JSON object")
    _check_storable(value)
    return value


async def read_json_object(request: web.Request) -> dict[str, Any]:
    """The request's body as a storable JSON object; else HTTP 400 with `{"error": why}`
    (413 when the body is larger than the server takes)."""
    try:
        return parse_json_object(await request.read())
    except UnusableJson as exc:
        raise bad_request(str(exc)) from None


def bad_request(why: str) -> web.HTTPBadRequest:
    return web.HTTPBadRequest(text=json.dumps({"error": why}), content_type="application/json")


def _check_storable(value: dict[str, Any]) -> None:
    """Depth and strings, walked without recursion (the nesting is the sender's choice)."""
    todo: list[tuple[Any, int]] = [(value, 1)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, str):
            if UNSTORABLE.search(item):
                raise UnusableJson("body holds a NUL or a lone surrogate")
            continue
        if not isinstance(item, dict | list):
            continue
        if depth > MAX_DEPTH:
            raise UnusableJson(f"body is nested deeper than {MAX_DEPTH}")
        if isinstance(item, dict):
            todo.extend((key, depth) for key in item)
            item = item.values()
        todo.extend((child, depth + 1) for child in item)


def _int(text: str) -> int:
    if len(text) > MAX_NUMBER_LENGTH:
        raise UnusableJson(f"a number of {len(text)} digits")
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if len(text) > MAX_NUMBER_LENGTH or not math.isfinite(value):
        raise UnusableJson(f"a number out of range: {text[:40]}")
    return value


def _refuse_constant(name: str) -> Any:
    raise UnusableJson(f"{name} is not a JSON number")
