"""Building Meilisearch search requests and reading excerpts out of the responses."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from storage.search.excerpts import ELLIPSIS
from storage.search.meili_documents import facet_value
from storage.search.tokenizer import is_cjk, query_units

# Meilisearch ignores every query word after the tenth.
MEILI_QUERY_WORDS = 10
# Private-use characters as highlight tags: they cannot clash with markup in the text, and we
# strip them before anyone sees them.
HIGHLIGHT_PRE = "\ue000"
HIGHLIGHT_POST = "\ue001"
# Words around the match; CJK "words" are one or two characters, so this is ~40-200 chars.
CROP_WORDS = 30
EXCERPT_MAX_CHARS = 200

_LATIN_WORD_RE = re.compile(r"[^\W_]+")
_CJK_CHAR_RE = re.compile(r"[\u3005\u3007\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WHITESPACE_RE = re.compile(r"\s+")


def quote(value: str) -> str:
    """A filter string literal. milli first turns `\\"` into `"`, then unescapes the rest
    Rust-style (`\\\\` -> `\\`), so escaping backslashes and double quotes round-trips any
    value, including ones ending in a backslash."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def filter_expression(terms: Mapping[str, Sequence[str]]) -> str | None:
    """`session_id IN ["a","b"] AND kind IN ["message"]`; values in their stored encoding."""
    clauses = []
    for field_name, values in terms.items():
        quoted = ", ".join(quote(facet_value(v)) for v in values)
        clauses.append(f"{field_name} IN [{quoted}]")
    return " AND ".join(clauses) or None


def keys_filter(keys: Sequence[str], not_rev: str | None = None) -> str:
    expr = f"doc_key IN [{', '.join(quote(k) for k in keys)}]"
    if not_rev is not None:
        expr += f" AND rev != {quote(not_rev)}"
    return expr


def meili_query_text(query: str) -> str:
    """The query as Meilisearch should see it: our query units (technical chunks whole, jieba
    words, merged single characters), stop words and repeats dropped, cut where Meilisearch
    would stop counting. Its own cut happens after its segmentation, which for Chinese we can
    only estimate; cutting here first means the words it drops are stop words and repeats,
    not the end of what the user asked."""
    picked: list[str] = []
    used = 0
    for unit in query_units(query):
        # `"` starts a phrase search and a leading `-` negates; neither is meant here.
        unit = unit.replace('"', " ").strip().lstrip("-")
        if not unit:
            continue
        cost = _estimated_words(unit)
        if picked and used + cost > MEILI_QUERY_WORDS:
            break
        picked.append(unit)
        used += cost
    return " ".join(picked)


def _estimated_words(unit: str) -> int:
    """Words Meilisearch will count for this unit: it splits on all punctuation (`_`, `.`,
    `/` included) and cuts Chinese into dictionary words of one to three characters."""
    if is_cjk(unit):
        cjk = len(_CJK_CHAR_RE.findall(unit))
        latin = len(_LATIN_WORD_RE.findall(_CJK_CHAR_RE.sub(" ", unit)))
        return max(1, math.ceil(cjk / 2) + latin)
    return max(1, len(_LATIN_WORD_RE.findall(unit)))


def search_body(q: str, filter_expr: str | None, limit: int) -> dict[str, Any]:
    body: dict[str, Any] = {
        "limit": limit,
        "showRankingScore": True,
        "attributesToRetrieve": ["src", "title", "text"],
        "attributesToCrop": ["text"],
        "cropLength": CROP_WORDS,
        "cropMarker": ELLIPSIS,
        "attributesToHighlight": ["text"],
        "highlightPreTag": HIGHLIGHT_PRE,
        "highlightPostTag": HIGHLIGHT_POST,
        # When no document has every word, drop words from the end of the query. Not
        # "frequency": it drops the most common words first, so a word found nowhere (a typo,
        # a compound we also sent as parts) is kept to the last and empties the result.
        "matchingStrategy": "last",
        # Without this, a short query is language-detected, and pure-Han text can be taken
        # for Japanese and segmented differently from the documents.
        "locales": ["cmn", "eng"],
    }
    if filter_expr is not None:
        body["filter"] = filter_expr
    return body


def excerpt_from_formatted(formatted: str, max_len: int = EXCERPT_MAX_CHARS) -> str:
    """Meilisearch's crop, highlight tags removed, at most `max_len` characters, keeping the
    first highlighted match in view."""
    text = _WHITESPACE_RE.sub(" ", formatted).strip()
    anchor = text.find(HIGHLIGHT_PRE)
    text = text.replace(HIGHLIGHT_PRE, "").replace(HIGHLIGHT_POST, "")
    if len(text) <= max_len:
        return text
    anchor = max(anchor, 0)
    start = max(0, min(anchor - max_len // 3, len(text) - (max_len - 2)))
    end = min(len(text), start + max_len - 2)
    prefix = "" if start == 0 or text.startswith(ELLIPSIS, start) else ELLIPSIS
    suffix = "" if end == len(text) else ELLIPSIS
    return f"{prefix}{text[start:end]}{suffix}"[:max_len]
