"""The search layer as the rest of the bot sees it: a failing backend never fails its caller.

Callers get "no evidence" (an empty result) when the backend is down; the error is logged and
counted in /metrics (`maka_search_errors_total`), and `maka search rebuild` repairs an index
that missed writes.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from prometheus_client import Counter

from bot.config import SearchBackend, Settings, reveal
from storage.search import SearchDocument, SearchError, SearchFilters, SearchHit, SearchIndex
from storage.search.tokenizer import configure_tokenizer

log = logging.getLogger(__name__)
SEARCH_ERRORS = Counter("maka_search_errors_total", "Search backend failures", ["operation"])


def open_index(settings: Settings) -> SearchIndex:
    configure_tokenizer(settings.data_dir / "cache")
    if settings.search_backend is SearchBackend.MEILISEARCH:
        from storage.search.meili import MeiliSearchIndex

        assert settings.meili_url
        return MeiliSearchIndex(settings.meili_url, reveal(settings.meili_key))
    from storage.search.embedded import EmbeddedSearchIndex

    return EmbeddedSearchIndex(Path(settings.data_dir) / "search")


class SearchService:
    def __init__(self, index: SearchIndex) -> None:
        self.index = index

    async def search(
        self, query: str, filters: SearchFilters | None = None, limit: int = 10
    ) -> list[SearchHit]:
        return await self.try_search(query, filters, limit) or []

    async def try_search(
        self, query: str, filters: SearchFilters | None = None, limit: int = 10
    ) -> list[SearchHit] | None:
        """None when the backend failed (for callers that say "evidence unavailable")."""
        try:
            return await self.index.search(query, filters, limit)
        except (SearchError, OSError) as exc:
            SEARCH_ERRORS.labels("search").inc()
            log.warning("search failed, answering without evidence: %s", exc)
            return None

    async def upsert(self, docs: Sequence[SearchDocument]) -> bool:
        if not docs:
            return True
        try:
            await self.index.upsert(docs)
            return True
        except (SearchError, OSError) as exc:
            SEARCH_ERRORS.labels("upsert").inc()
            log.warning(
                "indexing %d documents failed (maka search rebuild repairs it): %s", len(docs), exc
            )
            return False

    async def delete(self, ids: Sequence[str]) -> bool:
        if not ids:
            return True
        try:
            await self.index.delete(ids)
            return True
        except (SearchError, OSError) as exc:
            SEARCH_ERRORS.labels("delete").inc()
            log.warning("deleting %d documents failed (retried): %s", len(ids), exc)
            return False

    async def health(self) -> str | None:
        try:
            await self.index.health()
        except (SearchError, OSError) as exc:
            return f"{type(exc).__name__}: {exc}"
        return None

    async def close(self) -> None:
        await self.index.close()
