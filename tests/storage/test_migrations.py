from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect

from storage.db import create_database
from storage.migrate import current_revision, head_revision, migrate
from storage.models import Base
from storage.urls import normalize_database_url
from tests import databases

EXPECTED_TABLES = {
    "conversations",
    "inbound_events",
    "inbox_items",
    "outbox",
    "sessions",
    "session_events",
    "model_calls",
    "timers",
    "leases",
}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def empty_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield normalize_database_url(f"sqlite:///{tmp_path / 'empty.db'}")
        return
    server = request.getfixturevalue("postgres_server")
    url = asyncio.run(databases.create_postgres_database(server, migrated=False))
    yield url
    asyncio.run(databases.drop_postgres_database(server, url))


async def test_migrations_apply_from_empty_and_match_the_models(empty_database_url: str) -> None:
    db = create_database(empty_database_url)
    try:
        assert await current_revision(db) is None
        await migrate(db)
        assert await current_revision(db) == head_revision()
        async with db.engine.connect() as conn:
            tables = set(await conn.run_sync(lambda c: inspect(c).get_table_names()))
            drift = await conn.run_sync(
                lambda c: compare_metadata(MigrationContext.configure(c), Base.metadata)
            )
        assert EXPECTED_TABLES <= tables
        assert drift == [], f"models and migrations differ: {drift}"
    finally:
        await db.dispose()


async def test_migrating_twice_is_harmless(empty_database_url: str) -> None:
    db = create_database(empty_database_url)
    try:
        await migrate(db)
        await migrate(db)
        assert await current_revision(db) == head_revision()
    finally:
        await db.dispose()
