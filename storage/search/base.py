"""What every search backend offers: documents in, ranked hits out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, runtime_checkable

# Hard cap on hits per search; Meilisearch refuses to go past 1000 by default anyway.
MAX_LIMIT = 1000


@dataclass(frozen=True)
class SearchDocument:
    """One searchable thing (a message, a note, a log). `id` is ours, any string; backends
    map it to whatever their storage accepts."""

    id: str
    kind: str
    text: str
    title: str = ""
    session_id: str | None = None
    source_id: str | None = None
    scope: str | None = None
    time: datetime | None = None

    def __post_init__(self) -> None:
        if not self.id:
            raise ValueError("SearchDocument.id must be a non-empty string")


@dataclass(frozen=True)
class SearchFilters:
    """Restrictions on a search. None means "any value"; an empty sequence means "none of
    them", so the search matches nothing (a caller that resolved the user's sessions to an
    empty list must not get everybody's messages)."""

    session_ids: Sequence[str] | None = None
    kinds: Sequence[str] | None = None
    scopes: Sequence[str] | None = None
    source_ids: Sequence[str] | None = None

    def matches_nothing(self) -> bool:
        return any(
            values is not None and len(values) == 0
            for values in (self.session_ids, self.kinds, self.scopes, self.source_ids)
        )

    def terms(self) -> dict[str, list[str]]:
        """Field name -> allowed values, for the fields that are restricted."""
        out: dict[str, list[str]] = {}
        for name, values in (
            ("session_id", self.session_ids),
            ("kind", self.kinds),
            ("scope", self.scopes),
            ("source_id", self.source_ids),
        ):
            if values is not None:
                if isinstance(values, str):
                    # A bare string is a sequence of characters; filtering on those would be a
                    # silent, wrong result.
                    raise TypeError(f"{name} filter must be a sequence of strings, not a str")
                out[name] = list(dict.fromkeys(values))
        return out


@dataclass
class SearchHit:
    """Not frozen: a search builds ten to a few hundred of these, and a frozen dataclass's
    `__init__` (`object.__setattr__` per field) costs twice a plain one's."""

    id: str
    kind: str
    session_id: str | None
    source_id: str | None
    scope: str | None
    title: str
    # Relevance in [0, 1], higher is better. Comparable between hits of one search; across
    # searches and backends it is only a rough guide.
    score: float
    excerpts: list[str] = field(default_factory=list)
    time: datetime | None = None


@runtime_checkable
class SearchIndex(Protocol):
    """A full-text index. Every method may raise `storage.search.errors.SearchError`."""

    async def upsert(self, docs: Sequence[SearchDocument]) -> None:
        """Add documents, replacing any with the same id. Visible to `search` on return."""
        ...

    async def delete(self, ids: Sequence[str]) -> None:
        """Remove documents by id; unknown ids are ignored."""
        ...

    async def search(
        self, query: str, filters: SearchFilters | None = None, limit: int = 10
    ) -> list[SearchHit]:
        """Best hits first, at most `limit` (capped at MAX_LIMIT)."""
        ...

    async def clear(self) -> None:
        """Remove every document."""
        ...

    async def close(self) -> None: ...

    async def health(self) -> None:
        """Return if the index can serve searches; raise SearchError otherwise."""
        ...


def effective_limit(limit: int) -> int:
    return max(0, min(limit, MAX_LIMIT))
