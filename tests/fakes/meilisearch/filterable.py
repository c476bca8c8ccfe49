"""Which attributes (and operators) a filter may use, from `filterableAttributes` rules."""

from __future__ import annotations

import re
from typing import Any

from .filter_parser import FilterError, filter_attributes
from .state import _Index


def _pattern_matches(pattern: str, name: str) -> bool:
    regex = "^" + ".*".join(re.escape(p) for p in pattern.split("*")) + "$"
    return re.match(regex, name) is not None


def _filter_features(index: _Index, attribute: str) -> dict[str, bool] | None:
    """Features of the first filterable rule matching `attribute`; None if not filterable."""
    for rule in index.settings["filterableAttributes"]:
        if isinstance(rule, str):
            if _pattern_matches(rule, attribute):
                return {"equality": True, "comparison": True}
        elif any(_pattern_matches(p, attribute) for p in rule["attributePatterns"]):
            features: dict[str, bool] = rule["features"]["filter"]
            return features
    return None


def _check_filterable(index: _Index, tree: Any) -> None:
    patterns = [
        r if isinstance(r, str) else ", ".join(r["attributePatterns"])
        for r in index.settings["filterableAttributes"]
    ]
    for attribute, operator in filter_attributes(tree):
        features = _filter_features(index, attribute)
        if features is None:
            available = (
                f" Available filterable attribute patterns are: `{', '.join(patterns)}`."
                if patterns
                else " This index does not have configured filterable attributes."
            )
            raise FilterError(f"Attribute `{attribute}` is not filterable.{available}")
        kind = "comparison" if operator in ("<", ">", "<=", ">=", "TO") else "equality"
        if not features.get(kind, False):
            raise FilterError(
                f"Filter operator `{operator}` is not allowed for the attribute `{attribute}`."
            )
