"""Documents: primary-key resolution/inference, document-id validation, field selection."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from .errors import ApiError
from .state import _Index

_DOC_ID_RE = re.compile(r"[A-Za-z0-9_-]{1,511}")


def _resolve_primary_key(index: _Index, asked: str | None, docs: list[dict[str, Any]]) -> str:
    if index.primary_key is not None:
        if asked is not None and asked != index.primary_key:
            raise ApiError(
                400,
                "index_primary_key_already_exists",
                f"Index `{index.uid}`: Index already has a primary key: `{index.primary_key}`.",
            )
        return index.primary_key
    if asked is not None:
        return asked
    candidates = sorted({k for d in docs for k in d if k.lower().endswith("id")})
    if len(candidates) == 1:
        return candidates[0]
    if candidates:
        raise ApiError(
            400,
            "index_primary_key_multiple_candidates_found",
            "The primary key inference failed as the engine found "
            f"{len(candidates)} fields ending with `id` in their names.",
        )
    raise ApiError(
        400,
        "index_primary_key_no_candidate_found",
        "The primary key inference failed as the engine did not find any field "
        "ending with `id` in its name.",
    )


def _document_id(doc: dict[str, Any], key: str) -> str:
    if key not in doc:
        raise ApiError(
            400,
            "missing_document_id",
            f"Document doesn't have a `{key}` attribute: `{json.dumps(doc)[:200]}`.",
        )
    value = doc[key]
    valid = (isinstance(value, int) and not isinstance(value, bool) and value >= 0) or (
        isinstance(value, str) and _DOC_ID_RE.fullmatch(value) is not None
    )
    if not valid:
        raise ApiError(
            400,
            "invalid_document_id",
            f"Document identifier `{json.dumps(value)}` is invalid. A document "
            "identifier can be of type integer or string, only composed of "
            "alphanumeric characters (a-z A-Z 0-9), hyphens (-) and underscores "
            "(_), and can not be more than 511 bytes.",
        )
    return str(value)


def _select(doc: dict[str, Any], attributes: list[str]) -> dict[str, Any]:
    if "*" in attributes:
        return copy.deepcopy(doc)
    return {k: copy.deepcopy(v) for k, v in doc.items() if k in attributes}
