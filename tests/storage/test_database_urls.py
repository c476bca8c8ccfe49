"""Which database URLs the service takes: a SQLite file, never a memory database (each
connection would get an empty one of its own, and everything stored would go with the
process)."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage.db import create_database
from storage.urls import DatabaseUrlError, normalize_database_url

MEMORY_URLS = [
    "sqlite:///:memory:",
    "sqlite+aiosqlite:///:memory:",
    "sqlite:///file:maka?mode=memory&cache=shared&uri=true",
    "sqlite:///file::memory:?cache=shared&uri=true",
]


@pytest.mark.parametrize("url", MEMORY_URLS)
def test_a_memory_database_is_refused_with_what_to_give_instead(url: str) -> None:
    with pytest.raises(DatabaseUrlError, match=r"memory SQLite database .* sqlite:///\./\.maka"):
        normalize_database_url(url)


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///"])
def test_a_sqlite_url_without_a_path_is_refused(url: str) -> None:
    with pytest.raises(DatabaseUrlError, match="needs a file path"):
        normalize_database_url(url)


def test_create_database_refuses_a_memory_url_it_was_handed_directly() -> None:
    with pytest.raises(DatabaseUrlError, match="memory SQLite database"):
        create_database("sqlite+aiosqlite:///:memory:")


async def test_a_sqlite_file_url_is_a_database_that_keeps_what_it_stores(tmp_path: Path) -> None:
    url = normalize_database_url(f"sqlite:///{tmp_path / 'kept.db'}")
    assert url.startswith("sqlite+aiosqlite:///")
    db = create_database(url)
    try:
        await db.ping()
    finally:
        await db.dispose()
    assert (tmp_path / "kept.db").is_file()
