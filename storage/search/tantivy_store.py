"""The synchronous tantivy side of the embedded backend. Every method blocks; the async facade
in `embedded.py` runs them in worker threads (a small search on the event loop).

Layout: our tokenizer's output goes, space-joined, into `tokens`, indexed by tantivy's
built-in `whitespace` tokenizer (built-in, so reopening the index needs no registration);
filter fields use the `raw` tokenizer so a value is one exact term; the original document is
one stored JSON array (PAYLOAD_FIELDS), for hits and excerpts.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import tantivy

from storage.search.base import SearchDocument, SearchHit
from storage.search.eras import Window, era_tokens, recent_window
from storage.search.errors import SearchError, SearchIndexLockedError
from storage.search.excerpts import excerpts
from storage.search.scoring import bm25_ceiling, normalize
from storage.search.tantivy_open import open_index
from storage.search.tantivy_query import (
    MAX_TERM_UNION,
    build_query,
    filter_postings,
    recent_clause,
)
from storage.search.tokenizer import tokenize

FILTER_FIELDS = ("session_id", "source_id", "kind", "scope")
# In every document's `tokens`: its doc_freq is tantivy's BM25 N (deleted docs included).
# Our tokenizer never emits it: it drops chunks without a letter or digit.
ALL_DOCS_TOKEN = "\x01"
# A token in more documents than this is common: the search weighs it only in a window of
# about WINDOW_DOCS of the newest documents (eras.py), then WINDOW_DOCS * WIDENING if that
# found fewer hits than asked, then everywhere. Rarer tokens are searched over all history.
# tantivy scores a plain union's postings in ~10 ns each (10,000: a tenth of a millisecond),
# a window's in ~20-30 ns plus a fixed cost per index segment (measured, 2026-12-06): a
# window of a few thousand documents costs about what a rare token's whole history does.
RARE_POSTINGS = 10_000
WINDOW_DOCS = 3_000
WIDENING = 8
# A posting in the window's intersection costs about this many in a plain union (measured):
# a window leaving out fewer of a common token's documents costs more than it saves (say,
# documents indexed without a time, all stamped with the hour they were indexed in).
WINDOW_COST = 3
# Bounds the boolean query; past this many distinct tokens a query is a pasted document.
MAX_QUERY_TOKENS = 64
# The stored payload is a JSON array of these, in this order: an array decodes in well under
# half the time of an object with its keys, and every hit decodes one. Indexes written before
# hold objects with these keys, which read the same.
PAYLOAD_FIELDS = ("id", "kind", "title", "text", "session_id", "source_id", "scope", "time")
_PAYLOAD_DECODER = json.JSONDecoder()


def build_schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", tokenizer_name="raw", index_option="basic")
    for name in FILTER_FIELDS:
        builder.add_text_field(name, tokenizer_name="raw", index_option="basic")
    # Frequencies for BM25; no positions: we never run phrase queries.
    builder.add_text_field("tokens", tokenizer_name="whitespace", index_option="freq")
    builder.add_bytes_field("payload", stored=True, indexed=False)
    return builder.build()


@dataclass(frozen=True)
class PreparedDocument:
    """A document with its tokens computed, ready for the writer."""

    doc: SearchDocument
    tokens: str


def prepare(doc: SearchDocument) -> PreparedDocument:
    tokens = tokenize(doc.title) + tokenize(doc.text) if doc.title else tokenize(doc.text)
    tokens.append(ALL_DOCS_TOKEN)
    tokens.extend(era_tokens(doc.time if doc.time is not None else datetime.now(UTC)))
    return PreparedDocument(doc, " ".join(tokens))


class TantivyStore:
    def __init__(self, path: Path, writer_heap_bytes: int) -> None:
        self._path = path
        self._heap = writer_heap_bytes
        self._open_lock = threading.Lock()
        # One writer per index; tantivy itself would refuse a second one.
        self._write_lock = threading.Lock()
        self._index: tantivy.Index | None = None
        self._schema: tantivy.Schema | None = None
        self._writer: tantivy.IndexWriter | None = None
        self._closed = False
        self._recent_cache: tuple[tuple[int, int, int], Recent | None] | None = None

    # -- lifecycle ------------------------------------------------------------------------

    def _opened(self) -> tuple[tantivy.Index, tantivy.Schema]:
        index, schema = self._index, self._schema
        if index is not None and schema is not None:
            return index, schema
        with self._open_lock:
            if self._closed:
                raise SearchError(f"search index at {self._path} is closed")
            if self._index is None:
                schema = build_schema()
                index = open_index(self._path, schema)
                # "commit" reloads when another process commits; our own commits reload
                # explicitly so a search right after a write sees it.
                index.config_reader(reload_policy="commit")
                self._schema, self._index = schema, index
            assert self._index is not None and self._schema is not None
            return self._index, self._schema

    def _writer_locked(self) -> tantivy.IndexWriter:
        """The writer, created on first write. Caller holds `_write_lock`."""
        if self._writer is None:
            index, _ = self._opened()
            try:
                self._writer = index.writer(heap_size=self._heap, num_threads=1)
            except ValueError as exc:
                if "LockBusy" in str(exc):
                    raise SearchIndexLockedError(
                        f"the search index at {self._path} is held by another writer "
                        "(usually another process); only one may write to it at a time"
                    ) from exc
                raise SearchError(f"cannot write to search index at {self._path}: {exc}") from exc
        return self._writer

    def close(self) -> None:
        with self._write_lock, self._open_lock:
            self._closed = True
            writer, self._writer = self._writer, None
            if writer is not None:
                # Finishes background merges and releases the directory lock.
                writer.wait_merging_threads()
            self._index = None

    # -- writes ---------------------------------------------------------------------------

    def upsert(self, prepared: Sequence[PreparedDocument]) -> None:
        latest = {p.doc.id: p for p in prepared}  # last one wins within a batch
        docs = [self._to_tantivy(item) for item in latest.values()]
        with self._write_lock:
            writer = self._writer_locked()
            with _all_or_nothing(writer):
                for doc_id, doc in zip(latest, docs, strict=True):
                    writer.delete_documents_by_term("id", doc_id)
                    writer.add_document(doc)
            self._reload()

    def delete(self, ids: Sequence[str]) -> None:
        with self._write_lock:
            writer = self._writer_locked()
            with _all_or_nothing(writer):
                for doc_id in set(ids):
                    writer.delete_documents_by_term("id", doc_id)
            self._reload()

    def clear(self) -> None:
        with self._write_lock:
            writer = self._writer_locked()
            with _all_or_nothing(writer):
                writer.delete_all_documents()
            self._reload()

    def _reload(self) -> None:
        index, _ = self._opened()
        index.reload()

    @staticmethod
    def _to_tantivy(item: PreparedDocument) -> tantivy.Document:
        doc = item.doc
        out = tantivy.Document()
        out.add_text("id", doc.id)
        for name in FILTER_FIELDS:
            value = getattr(doc, name)
            if value is not None:
                out.add_text(name, value)
        out.add_text("tokens", item.tokens)
        out.add_bytes("payload", _encode_payload(doc))
        return out

    # -- reads ----------------------------------------------------------------------------

    def health(self) -> None:
        index, _ = self._opened()
        index.searcher().search(tantivy.Query.empty_query(), 1)

    def plan(
        self,
        query_tokens: Sequence[str],
        *,
        only_if_open: bool = False,
        now: datetime | None = None,
    ) -> SearchPlan | None:
        """The query's tokens, their document frequencies and, when some are common, the
        window of recent documents to weigh those in, on a fresh searcher; None when
        `only_if_open` and the index is not open yet (opening it touches the disk)."""
        if only_if_open and self._index is None:
            return None
        index, schema = self._opened()
        searcher = index.searcher()
        tokens = list(query_tokens)[:MAX_QUERY_TOKENS]
        freqs = [searcher.doc_freq("tokens", t) for t in tokens]
        recent = None
        if any(df > RARE_POSTINGS for df in freqs):
            now = now if now is not None else datetime.now(UTC)
            recent = self._recent(searcher, schema, now)
            if recent is not None and not _worth(recent.window, freqs):
                recent = None
        return SearchPlan(searcher, schema, tokens, freqs, recent, now)

    def _recent(
        self, searcher: tantivy.Searcher, schema: tantivy.Schema, now: datetime
    ) -> Recent | None:
        """The window and its query clause. The walk reads a dozen document frequencies and
        the clause takes a term query per era, a sizeable part of a small search; an index of
        the same documents and segments in the same hour has the same window (one a few
        documents stale, after deletes and adds that balance, is as good)."""
        key = (searcher.num_docs, searcher.num_segments, int(now.timestamp()) // 3600)
        cached = self._recent_cache
        if cached is not None and cached[0] == key:
            return cached[1]
        window = recent_window(_doc_freq_of(searcher), WINDOW_DOCS, now)
        recent = None if window is None else Recent(window, recent_clause(schema, window))
        self._recent_cache = (key, recent)  # one assignment: readers in other threads see either
        return recent

    def search(
        self, query_tokens: Sequence[str], filters: dict[str, list[str]], limit: int
    ) -> list[SearchHit]:
        if not query_tokens or limit <= 0:
            return []
        plan = self.plan(query_tokens)
        assert plan is not None
        return self.run(plan, filters, limit)

    def run(self, plan: SearchPlan, filters: dict[str, list[str]], limit: int) -> list[SearchHit]:
        if not plan.tokens or limit <= 0:
            return []
        searcher = plan.searcher
        recent = plan.recent
        if recent is not None and filter_postings(searcher, filters) <= WINDOW_DOCS:
            recent = None  # the filter bounds the work already; no need to leave history out
        common = [df > RARE_POSTINGS for df in plan.doc_freqs]
        while True:
            clause = None if recent is None else recent.clause
            query = build_query(plan.schema, plan.tokens, common, filters, clause)
            # No count: counting visits every match again, and nothing here reads it.
            result = searcher.search(query, limit, count=False)
            if recent is None or len(result.hits) >= limit:
                break
            # Too few matches among recent documents: a wider window, then everything.
            recent = self._wider(plan, recent.window)
        if not result.hits:
            return []
        ceiling = bm25_ceiling(searcher.doc_freq("tokens", ALL_DOCS_TOKEN), plan.doc_freqs)
        tokens = plan.tokens
        return [
            _to_hit(
                _decode_payload(searcher.doc(address).get_first("payload")),
                normalize(float(raw_score), ceiling),
                tokens,
            )
            for raw_score, address in result.hits
        ]

    def _wider(self, plan: SearchPlan, window: Window) -> Recent | None:
        if plan.now is None or window.docs >= WINDOW_DOCS * WIDENING:
            return None
        wider = recent_window(_doc_freq_of(plan.searcher), WINDOW_DOCS * WIDENING, plan.now)
        wider = _worth(wider, plan.doc_freqs)
        return None if wider is None else Recent(wider, recent_clause(plan.schema, wider))


@dataclass(frozen=True)
class Recent:
    """A window of recent documents and the query clause matching them, built once for the
    window (a term query per era)."""

    window: Window
    clause: tantivy.Query


@dataclass(frozen=True)
class SearchPlan:
    """A query's tokens and their document frequencies on one searcher (one state of the
    index): the frequencies say how much work the search is and normalize its scores."""

    searcher: tantivy.Searcher
    schema: tantivy.Schema
    tokens: list[str]
    doc_freqs: list[int]
    # The recent documents common tokens are weighed in, with the query clause matching
    # them (None: everything), as of `now`.
    recent: Recent | None
    now: datetime | None

    def is_small(self, filters: dict[str, list[str]], max_postings: int) -> bool:
        """Whether tantivy's part of the search is cheap: the postings it scores, its bulk,
        are at most `max_postings` (a common token's are those in the window), and no filter
        is a term set (which reads all of its postings)."""
        recent = self.recent
        postings = sum(
            df if recent is None or df <= RARE_POSTINGS else min(df, recent.window.docs)
            for df in self.doc_freqs
        )
        return postings <= max_postings and all(
            len(values) <= MAX_TERM_UNION for values in filters.values()
        )


@contextmanager
def _all_or_nothing(writer: tantivy.IndexWriter) -> Iterator[None]:
    """Commit what the block queued, or drop all of it: a half-applied batch must not ride
    along with the next commit."""
    try:
        yield
        writer.commit()
    except BaseException:
        writer.rollback()
        raise


def _worth(window: Window | None, doc_freqs: list[int]) -> Window | None:
    return window if window is not None and window.docs * WINDOW_COST < max(doc_freqs) else None


def _doc_freq_of(searcher: tantivy.Searcher) -> Callable[[str], int]:
    return lambda token: int(searcher.doc_freq("tokens", token))


def _encode_payload(doc: SearchDocument) -> bytes:
    fields = [
        doc.id,
        doc.kind,
        doc.title,
        doc.text,
        doc.session_id,
        doc.source_id,
        doc.scope,
        doc.time.isoformat() if doc.time is not None else None,
    ]
    return json.dumps(fields, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _decode_payload(raw: Any) -> tuple[Any, ...]:
    """The stored fields in PAYLOAD_FIELDS order. raw_decode: the payload is our own compact
    JSON, so json.loads' checks for surrounding whitespace are work a hit does not need."""
    data = _PAYLOAD_DECODER.raw_decode(raw.decode("utf-8"))[0]
    if isinstance(data, list):
        return tuple(data)
    # A document written before payloads were arrays: an object with those keys.
    return (data["id"], data["kind"], *(data.get(name) for name in PAYLOAD_FIELDS[2:]))


def _to_hit(payload: tuple[Any, ...], score: float, tokens: list[str]) -> SearchHit:
    doc_id, kind, title, text, session_id, source_id, scope, time = payload
    return SearchHit(
        id=doc_id,
        kind=kind,
        session_id=session_id,
        source_id=source_id,
        scope=scope,
        title=title or "",
        score=score,
        excerpts=excerpts(text or title or "", tokens),
        time=datetime.fromisoformat(time) if time else None,
    )
