"""Evaluating a parsed filter tree against a document, with milli's facet normalization."""

from __future__ import annotations

import unicodedata
from typing import Any

_MAX_FACET_BYTES = 468


def _normalize_facet(value: str) -> str:
    """milli's `normalize_facet`: NFKD, trimmed, lowercased, cut to 468 bytes."""
    normalized = unicodedata.normalize("NFKD", value.strip()).lower()
    return normalized.encode("utf-8")[:_MAX_FACET_BYTES].decode("utf-8", "ignore")


def _lookup(doc: dict[str, Any], attribute: str) -> tuple[bool, Any]:
    if attribute in doc:
        return True, doc[attribute]
    current: Any = doc
    for part in attribute.split("."):
        if not isinstance(current, dict) or part not in current:
            return False, None
        current = current[part]
    return True, current


def _as_number(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


def _compare(doc_value: Any, op: str, wanted: str) -> bool:
    values = doc_value if isinstance(doc_value, list) else [doc_value]
    for value in values:
        if isinstance(value, bool):
            equal = wanted.lower() == str(value).lower()
            if op == "=" and equal:
                return True
            continue
        if isinstance(value, int | float):
            number = _as_number(wanted)
            if number is None:
                continue
            ok = {
                "=": value == number,
                ">": value > number,
                "<": value < number,
                ">=": value >= number,
                "<=": value <= number,
            }[op]
        elif isinstance(value, str):
            a, b = _normalize_facet(value), _normalize_facet(wanted)
            ok = {"=": a == b, ">": a > b, "<": a < b, ">=": a >= b, "<=": a <= b}[op]
        else:
            continue
        if ok:
            return True
    return False


def matches(node: Any, doc: dict[str, Any]) -> bool:
    kind = node[0]
    if kind == "and":
        return all(matches(child, doc) for child in node[1])
    if kind == "or":
        return any(matches(child, doc) for child in node[1])
    if kind == "not":
        return not matches(node[1], doc)
    present, value = _lookup(doc, node[1])
    if kind == "exists":
        return present
    if kind == "is_null":
        return present and value is None
    if kind == "is_empty":
        return present and value in ("", [], {})
    if not present or value is None:
        return False
    if kind == "in":
        return any(_compare(value, "=", wanted) for wanted in node[2])
    if kind == "to":
        return _compare(value, ">=", node[2]) and _compare(value, "<=", node[3])
    op, wanted = node[2], node[3]
    if op == "!=":
        return not _compare(value, "=", wanted)
    return _compare(value, op, wanted)
