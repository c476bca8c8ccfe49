"""Search: accepted parameters, filtering, ranking (matching strategies, scores), distinct,
paging and hit formatting."""

from __future__ import annotations

import copy
import json
from typing import Any

from .errors import ApiError
from .filter_eval import matches
from .filter_parser import FilterError, parse_filter
from .filterable import _check_filterable, _filter_features
from .settings import _LOCALES
from .state import _Index
from .text import _DOC_WORD_RE, _crop, _fold, _highlight, _query_words, _Word

_SEARCH_PARAMS = {
    "q",
    "offset",
    "limit",
    "attributesToRetrieve",
    "attributesToCrop",
    "cropLength",
    "cropMarker",
    "attributesToHighlight",
    "highlightPreTag",
    "highlightPostTag",
    "showMatchesPosition",
    "filter",
    "distinct",
    "matchingStrategy",
    "attributesToSearchOn",
    "locales",
    "showRankingScore",
    "showRankingScoreDetails",
    "rankingScoreThreshold",
}
_UNSUPPORTED_SEARCH_PARAMS = {"page", "hitsPerPage", "sort", "facets", "hybrid", "vector"}


def _searchable(index: _Index, body: dict[str, Any], doc: dict[str, Any]) -> list[str]:
    configured = index.settings["searchableAttributes"]
    names = list(doc) if configured == ["*"] else configured
    restrict = body.get("attributesToSearchOn")
    if restrict is not None:
        for name in restrict:
            if configured != ["*"] and name not in configured:
                raise ApiError(
                    400,
                    "invalid_search_attributes_to_search_on",
                    f"Attribute `{name}` is not searchable.",
                )
        names = [n for n in names if n in restrict]
    return names


def _run_search(index: _Index, body: dict[str, Any]) -> dict[str, Any]:
    q = body.get("q") or ""
    limit, offset = int(body.get("limit", 20)), int(body.get("offset", 0))
    for locale in body.get("locales") or []:
        if locale not in _LOCALES:
            raise ApiError(400, "invalid_search_locales", f"Unknown value `{locale}` at `.locales`")
    docs = list(index.documents.values())
    if body.get("filter") not in (None, "", []):
        try:
            tree = parse_filter(body["filter"])
            _check_filterable(index, tree)
        except FilterError as exc:
            raise ApiError(400, "invalid_search_filter", str(exc)) from exc
        docs = [d for d in docs if matches(tree, d)]
    words = _query_words(q)
    scored = _rank(index, body, docs, words) if words else [(1.0, d) for d in docs]
    distinct = body.get("distinct") or index.settings["distinctAttribute"]
    if body.get("distinct") and _filter_features(index, distinct) is None:
        raise ApiError(
            400,
            "invalid_search_distinct",
            f"Attribute `{distinct}` is not filterable and thus, cannot be used as "
            "distinct attribute.",
        )
    if distinct:
        seen: set[str] = set()
        unique = []
        for score, doc in scored:
            value = json.dumps(doc.get(distinct), sort_keys=True)
            if doc.get(distinct) is None or value not in seen:
                seen.add(value)
                unique.append((score, doc))
        scored = unique
    threshold = body.get("rankingScoreThreshold")
    if threshold is not None:
        scored = [(s, d) for s, d in scored if s >= threshold]
    hits = [_hit(index, body, doc, score, words) for score, doc in scored[offset : offset + limit]]
    return {
        "hits": hits,
        "query": q,
        "processingTimeMs": 0,
        "limit": limit,
        "offset": offset,
        "estimatedTotalHits": len(scored),
    }


def _rank(
    index: _Index, body: dict[str, Any], docs: list[dict[str, Any]], words: list[_Word]
) -> list[tuple[float, dict[str, Any]]]:
    strategy = body.get("matchingStrategy", "last")
    if strategy not in ("last", "all", "frequency"):
        raise ApiError(
            400,
            "invalid_search_matching_strategy",
            f"Unknown value `{strategy}` at `.matchingStrategy`",
        )
    # Per doc: which query words each searchable attribute holds, in attribute order.
    per_doc = []
    for doc in docs:
        attrs = []
        for name in _searchable(index, body, doc):
            value = doc.get(name)
            if isinstance(value, str):
                folded = _fold(value)
                tokens = set(_DOC_WORD_RE.findall(folded))
                attrs.append({i for i, w in enumerate(words) if w.in_text(folded, tokens)})
        per_doc.append((doc, attrs))
    n = len(words)
    if strategy == "frequency":
        freq = [sum(1 for _, a in per_doc if any(i in s for s in a)) for i in range(n)]
        order = sorted(range(n), key=lambda i: -freq[i])  # most frequent dropped first
        levels = [set(range(n)) - set(order[:k]) for k in range(n)]
    else:
        levels = [set(range(n - k)) for k in range(1 if strategy == "all" else n)]
    # Sort key: ranking rules in their default order (words, then exactness, then attribute),
    # then insertion order; the score only has to agree with that order and stay in [0, 1].
    ranked: list[tuple[tuple[int, int, int, int], float, dict[str, Any]]] = []
    for position, (doc, attrs) in enumerate(per_doc):
        present = set().union(*attrs) if attrs else set()
        for required in levels:
            if required and required <= present:
                first_attr = min(i for i, s in enumerate(attrs) if s & required)
                exact = all(not words[i].prefix for i in required)
                score = (len(required) - 0.5 + 0.3 * exact + 0.2 / (1 + first_attr)) / n
                key = (-len(required), -exact, first_attr, position)
                ranked.append((key, round(min(1.0, score), 6), doc))
                break
    ranked.sort(key=lambda r: r[0])
    return [(score, doc) for _, score, doc in ranked]


def _hit(
    index: _Index, body: dict[str, Any], doc: dict[str, Any], score: float, words: list[_Word]
) -> dict[str, Any]:
    displayed = index.settings["displayedAttributes"]
    retrieve = body.get("attributesToRetrieve") or ["*"]
    hit = {
        k: copy.deepcopy(v)
        for k, v in doc.items()
        if ("*" in displayed or k in displayed) and ("*" in retrieve or k in retrieve)
    }
    crop = {}
    for spec in body.get("attributesToCrop") or []:
        name, _, length = spec.partition(":")
        crop[name] = int(length) if length else int(body.get("cropLength", 10))
    highlight = set(body.get("attributesToHighlight") or [])
    if crop or highlight:
        pre, post = body.get("highlightPreTag", "<em>"), body.get("highlightPostTag", "</em>")
        marker = body.get("cropMarker", "…")
        formatted: dict[str, Any] = {}
        for key, value in hit.items():
            if isinstance(value, str) and ("*" in crop or key in crop):
                value = _crop(value, words, crop.get(key, crop.get("*", 10)), marker)
            if isinstance(value, str) and ("*" in highlight or key in highlight):
                value = _highlight(value, words, pre, post)
            formatted[key] = value
        hit["_formatted"] = formatted
    if body.get("showRankingScore"):
        hit["_rankingScore"] = score
    return hit
