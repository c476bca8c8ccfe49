"""`maka restore` onto a PostgreSQL database that does not exist yet: created the way
`createdb` does it, refused in one line saying what to run when the role may not, dropped
again when the restore then fails. Real PostgreSQL; each test's database has a name of its own
and is dropped afterwards."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy.engine import make_url

from bot.cli.backup import run_backup, run_restore
from storage.models import InboundEvent
from storage.urls import asyncpg_dsn
from tests import databases
from tests.cli.test_backup_restore import _count, _one_line, _seed, _settings

pytestmark = pytest.mark.parametrize(
    "database_url", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True
)


@pytest.fixture
async def missing_database(postgres_server: str) -> AsyncIterator[str]:
    """The URL of a database that does not exist on the test server (dropped afterwards,
    whatever the test made of it)."""
    url = databases.with_database(postgres_server, f"maka_test_{secrets.token_hex(4)}_fresh")
    try:
        yield url
    finally:
        await databases.drop_postgres_database(postgres_server, url)


async def _database_exists(server: str, url: str) -> bool:
    conn = await asyncpg.connect(asyncpg_dsn(server))
    try:
        name = make_url(url).database
        return bool(await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name))
    finally:
        await conn.close()


async def test_restore_creates_the_postgresql_database_when_it_does_not_exist_yet(
    database_url: str, missing_database: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await _seed(database_url)
    file = tmp_path / "maka.backup"
    assert await run_backup(_settings(tmp_path, "source", database_url), file) == 0
    capsys.readouterr()

    assert await run_restore(_settings(tmp_path, "fresh", missing_database), file, force=False) == 0

    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"created the database {make_url(missing_database).database}: it did not exist"
    assert out[1].startswith(f"restored {file}")
    assert await _count(missing_database, InboundEvent, InboundEvent.message_id == "om_kept") == 1


async def test_a_role_that_may_not_create_the_database_is_told_what_to_run(
    database_url: str,
    missing_database: str,
    postgres_server: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    file = tmp_path / "maka.backup"
    assert await run_backup(_settings(tmp_path, "source", database_url), file) == 0
    capsys.readouterr()
    role = f"maka_test_nocreate_{secrets.token_hex(4)}"
    admin = await asyncpg.connect(asyncpg_dsn(postgres_server))
    try:
        await admin.execute(f'CREATE ROLE "{role}" LOGIN NOCREATEDB')
        url = make_url(missing_database).set(username=role).render_as_string(hide_password=False)

        assert await run_restore(_settings(tmp_path, "fresh", url), file, force=False) == 1
    finally:
        await admin.execute(f'DROP ROLE IF EXISTS "{role}"')
        await admin.close()

    line = _one_line(capsys.readouterr().err)
    name = make_url(missing_database).database
    assert line.startswith(f"the database {name} does not exist and {role} may not create")
    assert f'run CREATE DATABASE "{name}" OWNER "{role}"' in line
    assert not await _database_exists(postgres_server, missing_database)


async def test_a_failed_restore_drops_the_database_it_created(
    database_url: str,
    missing_database: str,
    postgres_server: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A backup cut short fails in pg_restore after the database was created for it: the
    server is left as it was, with no empty database named like the target."""
    await _seed(database_url)
    whole = tmp_path / "maka.backup"
    assert await run_backup(_settings(tmp_path, "source", database_url), whole) == 0
    cut = tmp_path / "cut.backup"
    cut.write_bytes(whole.read_bytes()[:-64])
    capsys.readouterr()

    assert await run_restore(_settings(tmp_path, "fresh", missing_database), cut, force=False) == 1

    said = capsys.readouterr()
    assert said.out.startswith("created the database")  # created, then dropped again
    assert _one_line(said.err).startswith("pg_restore failed, target unchanged")
    assert not await _database_exists(postgres_server, missing_database)


async def test_a_restore_onto_a_server_that_cannot_be_reached_fails_in_one_line(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "maka.backup"
    assert await run_backup(_settings(tmp_path, "source", database_url), file) == 0
    capsys.readouterr()
    nowhere = _settings(tmp_path, "nowhere", "postgresql://maka:secret@127.0.0.1:1/maka")

    assert await run_restore(nowhere, file, force=False) == 1

    line = _one_line(capsys.readouterr().err)
    assert line.startswith("cannot reach the database postgresql://maka:***@127.0.0.1:1/maka")
    assert "secret" not in line
