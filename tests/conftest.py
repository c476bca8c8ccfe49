"""Shared fixtures. Every database test runs on SQLite and on PostgreSQL.

PostgreSQL comes from MAKA_TEST_DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/test).
Where none is reachable the PostgreSQL half is skipped with the reason, except under CI,
where a missing database is a failure.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from storage.db import Database, create_database
from tests import databases


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "template.db"
    return asyncio.run(databases.migrated_sqlite_template(path))


@pytest.fixture(scope="session")
def postgres_server() -> str:
    """The base URL of a reachable PostgreSQL (skips, or fails under CI, when there is none)."""
    base = databases.postgres_base_url()
    problem = asyncio.run(databases.postgres_reachable(base))
    if problem:
        message = (
            f"PostgreSQL not reachable at {base} ({problem}); "
            "set MAKA_TEST_DATABASE_URL=postgresql://USER@HOST:PORT/DB"
        )
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return base


@pytest.fixture(scope="session")
def postgres_run_database(postgres_server: str) -> Iterator[str]:
    url = asyncio.run(databases.create_postgres_database(postgres_server))
    yield url
    asyncio.run(databases.drop_postgres_database(postgres_server, url))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path, sqlite_template: Path) -> str:
    """A migrated, empty database of each kind (sync: it runs outside the test's loop)."""
    if request.param == "sqlite":
        return databases.copy_sqlite(sqlite_template, tmp_path / "maka.db")
    url: str = request.getfixturevalue("postgres_run_database")
    asyncio.run(databases.truncate_postgres(url))
    return url


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    database = create_database(database_url)
    yield database
    await database.dispose()
