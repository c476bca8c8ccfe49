"""How our documents look inside Meilisearch, and back.

* Primary keys must match `[A-Za-z0-9_-]{1,511}`, so a document's key is the sha256 hex of our
  id, and each chunk is `{key}-{n}`; the original id travels in `src`.
* Meilisearch indexes only the first 65,535 positions of an attribute (a hard separator such as
  `.` costs 8), so long texts are split into chunks; `doc_key` ties the chunks of one document
  together for deletion and for `distinctAttribute`.
* Filter values are compared case-insensitively after NFKD, trimming and truncation to 468
  bytes (milli's `normalize_facet`), so `Chat-A` and `chat-a` would be one session. Values that
  survive that unchanged (lowercase ASCII ids, the common case) are stored as they are;
  anything else is stored as `~` + sha256, which cannot collide with the first kind.
* `tokens` holds our tokenizer's output for the chunk, limited to tokens Meilisearch will not
  split again (no punctuation): that gives it camelCase parts and CJK bigrams it would not
  produce itself.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from storage.search.base import SearchDocument, SearchHit
from storage.search.tokenizer import tokenize

PRIMARY_KEY = "pk"
FILTER_FIELDS = ("session_id", "source_id", "kind", "scope")
SEARCHABLE_FIELDS = ("title", "text", "tokens")

# 2,000 words keep a chunk far below 65,535 positions even with a hard separator between
# every pair of words and the tokens field's extra words.
CHUNK_MAX_WORDS = 2_000
CHUNK_MAX_CHARS = 6_000

_SAFE_FACET_RE = re.compile(r"[a-z0-9_.:@/+=-]{1,128}")
_ATOMIC_TOKEN_RE = re.compile(r"[^\W_]+")
_WORD_RE = re.compile(r"\S+")
# Preferred places to cut a long run without spaces (CJK text, minified code).
_SOFT_BREAK_RE = re.compile(r"[。！？；，、.!?;,]")


def doc_key(doc_id: str) -> str:
    return hashlib.sha256(doc_id.encode("utf-8")).hexdigest()


def chunk_pk(key: str, n: int) -> str:
    return f"{key}-{n}"


def facet_value(value: str) -> str:
    if _SAFE_FACET_RE.fullmatch(value):
        return value
    return "~" + hashlib.sha256(value.encode("utf-8")).hexdigest()


def meili_tokens(text: str) -> str:
    return " ".join(t for t in tokenize(text) if _ATOMIC_TOKEN_RE.fullmatch(t))


def to_meili_documents(doc: SearchDocument, rev: str) -> list[dict[str, Any]]:
    key = doc_key(doc.id)
    src = {
        "id": doc.id,
        "kind": doc.kind,
        "session_id": doc.session_id,
        "source_id": doc.source_id,
        "scope": doc.scope,
        "time": doc.time.isoformat() if doc.time is not None else None,
    }
    facets = {
        name: facet_value(value)
        for name in FILTER_FIELDS
        if (value := getattr(doc, name)) is not None
    }
    title_tokens = meili_tokens(doc.title) if doc.title else ""
    out = []
    for n, chunk in enumerate(chunk_text(doc.text)):
        tokens = meili_tokens(chunk)
        out.append(
            {
                PRIMARY_KEY: chunk_pk(key, n),
                "doc_key": key,
                "rev": rev,
                "chunk": n,
                "title": doc.title,
                "text": chunk,
                "tokens": f"{title_tokens} {tokens}" if title_tokens else tokens,
                "src": src,
                **facets,
            }
        )
    return out


def chunk_text(
    text: str, max_words: int = CHUNK_MAX_WORDS, max_chars: int = CHUNK_MAX_CHARS
) -> list[str]:
    """Consecutive pieces of `text`, each at most `max_words` whitespace-separated words and
    `max_chars` characters, cut at whitespace where possible. Always at least one piece."""
    if len(text) <= max_chars and len(text.split(None, max_words)) <= max_words:
        return [text]
    chunks: list[str] = []
    start: int | None = None
    end = 0
    words = 0
    for word_start, word_end in _words(text, max_chars):
        if start is not None and (words == max_words or word_end - start > max_chars):
            chunks.append(text[start:end])
            start, words = None, 0
        if start is None:
            start = word_start
        end = word_end
        words += 1
    if start is not None:
        chunks.append(text[start:end])
    return chunks or [""]


def _words(text: str, max_chars: int) -> Iterator[tuple[int, int]]:
    """Whitespace-separated words as (start, end); a word longer than `max_chars` is cut into
    pieces, preferably after punctuation."""
    for match in _WORD_RE.finditer(text):
        start, end = match.span()
        while end - start > max_chars:
            cut = start + max_chars
            breaks = list(_SOFT_BREAK_RE.finditer(text, start + max_chars // 2, cut))
            if breaks:
                cut = breaks[-1].end()
            yield start, cut
            start = cut
        yield start, end


def hit_from_meili(hit: dict[str, Any], excerpts: list[str]) -> SearchHit:
    src: dict[str, Any] = hit.get("src") or {}
    time = src.get("time")
    score = float(hit.get("_rankingScore", 0.0))
    return SearchHit(
        id=src["id"],
        kind=src["kind"],
        session_id=src.get("session_id"),
        source_id=src.get("source_id"),
        scope=src.get("scope"),
        title=hit.get("title") or "",
        score=min(1.0, max(0.0, score)),
        excerpts=excerpts,
        time=datetime.fromisoformat(time) if time else None,
    )
