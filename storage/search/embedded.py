"""The embedded backend: a tantivy index in a local directory, no server needed.

tantivy calls block (and release the GIL), so each one runs in a worker thread, but for a
small search: one whose tokens have few postings. tantivy's part of it then takes less than
the hop to a worker thread and back (two thread wake-ups, each tens of microseconds on a busy
machine), and turning its hits into `SearchHit`s is Python that holds the GIL, so the loop
waits for it wherever it runs. Such a search runs on the event loop. Only one process may
write to a directory at a time; a second writer gets `SearchIndexLockedError` on its first
write. Reading from several processes is fine.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from storage.search.base import (
    SearchDocument,
    SearchFilters,
    SearchHit,
    effective_limit,
)
from storage.search.tantivy_store import TantivyStore, prepare
from storage.search.tokenizer import is_warm, tokenize_query

# tantivy's minimum is 15 MB per indexing thread; we index with one thread. More only helps
# bulk reindexing, which commits in batches anyway.
DEFAULT_WRITER_HEAP_BYTES = 48_000_000
# The bounds of a search run on the event loop (see the module docstring). tantivy reads a
# posting in a few nanoseconds, so 50,000 take a fraction of a millisecond; a hit costs
# microseconds of Python (WorkHub evidence asks for up to 200); jieba cuts a short query in
# tens of microseconds once warm (loading it takes most of a second).
INLINE_MAX_POSTINGS = 50_000
INLINE_MAX_HITS = 200
INLINE_MAX_QUERY_CHARS = 64


class EmbeddedSearchIndex:
    def __init__(self, path: Path, *, writer_heap_bytes: int = DEFAULT_WRITER_HEAP_BYTES) -> None:
        self.path = path
        self._store = TantivyStore(path, writer_heap_bytes)

    async def upsert(self, docs: Sequence[SearchDocument]) -> None:
        if not docs:
            return
        await asyncio.to_thread(self._upsert_sync, list(docs))

    def _upsert_sync(self, docs: list[SearchDocument]) -> None:
        # Tokenizing is the expensive part; it happens here, off the event loop.
        self._store.upsert([prepare(doc) for doc in docs])

    async def delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        await asyncio.to_thread(self._store.delete, list(ids))

    async def search(
        self, query: str, filters: SearchFilters | None = None, limit: int = 10
    ) -> list[SearchHit]:
        limit = effective_limit(limit)
        if limit == 0 or (filters is not None and filters.matches_nothing()):
            return []
        terms = filters.terms() if filters is not None else {}
        if limit <= INLINE_MAX_HITS and len(query) <= INLINE_MAX_QUERY_CHARS and is_warm():
            plan = self._store.plan(tokenize_query(query), only_if_open=True)
            if plan is not None and plan.is_small(terms, INLINE_MAX_POSTINGS):
                return self._store.run(plan, terms, limit)
        return await asyncio.to_thread(self._search_sync, query, terms, limit)

    def _search_sync(self, query: str, terms: dict[str, list[str]], limit: int) -> list[SearchHit]:
        return self._store.search(tokenize_query(query), terms, limit)

    async def clear(self) -> None:
        await asyncio.to_thread(self._store.clear)

    async def close(self) -> None:
        await asyncio.to_thread(self._store.close)

    async def health(self) -> None:
        await asyncio.to_thread(self._store.health)
