"""The index settings we want, and whether the server already has them.

Settings updates are asynchronous tasks and some (distinctAttribute, filterableAttributes)
reindex every document, so we compare with `GET /settings` first and only send a PATCH when
something differs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from storage.search.meili_documents import FILTER_FIELDS, SEARCHABLE_FIELDS

LOCALES = ["cmn", "eng"]


def desired_settings() -> dict[str, Any]:
    return {
        # Order is ranking priority: a match in the title beats one in the body.
        "searchableAttributes": list(SEARCHABLE_FIELDS),
        # Equality only, no facet search: we filter, we never browse facet values, and each
        # feature costs index time and memory.
        "filterableAttributes": [
            {
                "attributePatterns": ["doc_key", "rev", *FILTER_FIELDS],
                "features": {
                    "facetSearch": False,
                    "filter": {"equality": True, "comparison": False},
                },
            }
        ],
        # One hit per document however many chunks matched; the best chunk wins.
        "distinctAttribute": "doc_key",
        "localizedAttributes": [
            {"attributePatterns": list(SEARCHABLE_FIELDS), "locales": list(LOCALES)}
        ],
        "typoTolerance": {
            "enabled": True,
            # `tokens` is identifiers and fragments: `conn` must not match `corn`, and a
            # 4-digit error code must not match its neighbour.
            "disableOnAttributes": ["tokens"],
            "disableOnNumbers": True,
        },
    }


def needs_update(current: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    return not _contains(current, desired, key="")


# The only list whose order means something; the server may return the others reordered.
_ORDERED = {"searchableAttributes"}


def _contains(current: Any, desired: Any, key: str) -> bool:
    """Whether `current` already says everything `desired` says. The server returns every
    field with defaults filled in, so objects only need to agree on the keys we set."""
    if isinstance(desired, Mapping):
        return isinstance(current, Mapping) and all(
            k in current and _contains(current[k], v, k) for k, v in desired.items()
        )
    if isinstance(desired, list):
        if not isinstance(current, list) or len(current) != len(desired):
            return False
        if all(isinstance(v, str) for v in desired) and key not in _ORDERED:
            return all(isinstance(v, str) for v in current) and sorted(current) == sorted(desired)
        return all(_contains(c, d, key) for c, d in zip(current, desired, strict=True))
    return bool(current == desired)
