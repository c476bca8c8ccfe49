"""Fixtures for the search tests: one `index` fixture runs every contract test against each
backend (embedded tantivy; Meilisearch on the loopback fake; Meilisearch on a real server when
MAKA_TEST_MEILI_URL is set)."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from storage.search.base import SearchIndex
from storage.search.embedded import EmbeddedSearchIndex
from storage.search.meili import MeiliSearchIndex
from storage.search.tokenizer import configure_tokenizer
from tests.fakes.meilisearch import FakeMeilisearch
from tests.search.support import MeiliTarget

FAKE_KEY = "fake-master-key"
REAL_URL = os.environ.get("MAKA_TEST_MEILI_URL")
REAL_KEY = os.environ.get("MAKA_TEST_MEILI_KEY")


@pytest.fixture(scope="session", autouse=True)
def _jieba_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    configure_tokenizer(tmp_path_factory.mktemp("jieba"))


@pytest.fixture(scope="session")
def fake_meili() -> Iterator[FakeMeilisearch]:
    with FakeMeilisearch(master_key=FAKE_KEY) as fake:
        yield fake


def _unique_uid() -> str:
    return f"maka-test-{uuid.uuid4().hex[:12]}"


_REAL = pytest.mark.skipif(
    REAL_URL is None, reason="set MAKA_TEST_MEILI_URL to test against a real Meilisearch"
)


@pytest.fixture(params=["fake", pytest.param("real", marks=_REAL)])
async def meili_target(
    request: pytest.FixtureRequest, fake_meili: FakeMeilisearch
) -> AsyncIterator[MeiliTarget]:
    if request.param == "fake":
        yield MeiliTarget(fake_meili.url, FAKE_KEY, _unique_uid(), fake_meili)
        return
    assert REAL_URL is not None
    target = MeiliTarget(REAL_URL, REAL_KEY, _unique_uid(), None)
    yield target
    await target.index().drop_index()


@pytest.fixture(params=["embedded", "meili-fake", pytest.param("meili-real", marks=_REAL)])
async def index(
    request: pytest.FixtureRequest, tmp_path: Path, fake_meili: FakeMeilisearch
) -> AsyncIterator[SearchIndex]:
    backend: SearchIndex
    if request.param == "embedded":
        backend = EmbeddedSearchIndex(tmp_path / "index")
    elif request.param == "meili-fake":
        backend = MeiliSearchIndex(fake_meili.url, FAKE_KEY, _unique_uid())
    else:
        assert REAL_URL is not None
        backend = MeiliSearchIndex(REAL_URL, REAL_KEY, _unique_uid())
    yield backend
    if isinstance(backend, MeiliSearchIndex) and request.param == "meili-real":
        await backend.drop_index()
    await backend.close()
