"""Helpers shared by the search tests."""

from __future__ import annotations

from dataclasses import dataclass

from storage.search.meili import MeiliSearchIndex
from tests.fakes.meilisearch import FakeMeilisearch


@dataclass(frozen=True)
class MeiliTarget:
    """Where a Meilisearch test talks to; `fake` is None on a real server."""

    url: str
    key: str | None
    uid: str
    fake: FakeMeilisearch | None

    def index(self, task_timeout: float = 10.0) -> MeiliSearchIndex:
        return MeiliSearchIndex(self.url, self.key, self.uid, task_timeout=task_timeout)
