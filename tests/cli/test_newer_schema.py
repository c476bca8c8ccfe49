"""A database a newer version migrated: every command that opens it refuses in one line and
leaves it as it was (an older version's migrations or writes could only damage it)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import inspect, text

from storage.db import create_database
from storage.migrate import head_revision, migrate
from storage.urls import normalize_database_url
from tests import databases
from tests.cli.test_commands import _env, _run

FUTURE = "9999_from_a_newer_version"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def newer_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        url = normalize_database_url(f"sqlite:///{tmp_path / 'newer.db'}")
        asyncio.run(_make_newer(url))
        yield url
        return
    server = request.getfixturevalue("postgres_server")
    url = asyncio.run(databases.create_postgres_database(server, migrated=False))
    asyncio.run(_make_newer(url))
    yield url
    asyncio.run(databases.drop_postgres_database(server, url))


async def _make_newer(url: str) -> None:
    db = create_database(url)
    try:
        await migrate(db)
        async with db.engine.begin() as conn:
            await conn.execute(text("UPDATE alembic_version SET version_num = :v"), {"v": FUTURE})
    finally:
        await db.dispose()


async def _schema(url: str) -> tuple[list[str], list[str]]:
    db = create_database(url)
    try:
        async with db.engine.connect() as conn:
            tables = await conn.run_sync(lambda c: sorted(inspect(c).get_table_names()))
            versions = (await conn.execute(text("SELECT version_num FROM alembic_version"))).all()
    finally:
        await db.dispose()
    return tables, [v[0] for v in versions]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_a_database_newer_than_the_code_is_refused_in_one_line(
    newer_database_url: str, tmp_path: Path
) -> None:
    before = await _schema(newer_database_url)
    assert before[1] == [FUTURE]
    refusal = (
        f"database schema is at {FUTURE}, which this version does not know (it knows up to "
        f"{head_revision()}): a newer version migrated it; run that version or restore a backup "
        "taken before the upgrade"
    )
    env = _env(tmp_path, MAKA_DATABASE_URL=newer_database_url, MAKA_HTTP_PORT=str(_free_port()))
    # At once: none of them writes, and each is a process start of a few seconds.
    runs = await asyncio.gather(*(_run([c], env) for c in ("migrate", "serve", "doctor")))
    for command, (code, out, err) in zip(("migrate", "serve"), runs, strict=False):
        lines = [line for line in (out + err).splitlines() if line.strip()]
        assert code == 1 and lines == [refusal], (command, lines)
    code, out, _ = runs[2]
    database_line = next(line for line in out.splitlines() if "database:" in line)
    assert code == 1 and database_line == f"FAIL  database: {refusal}"
    assert await _schema(newer_database_url) == before
