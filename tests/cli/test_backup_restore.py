"""`maka backup` / `maka restore` on both databases: real SQLite files, a real PostgreSQL with
its own pg_dump, pg_restore and psql, the embedded search index, and the real app under
Feishu traffic while a backup is taken."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import ColumnElement, func, select, text

from bot.cli.backup import run_backup, run_restore
from bot.config import Settings
from bot.memory.search import SearchService, open_index
from storage import backup as backup_module
from storage.claims import HOST_LEASE_PREFIX
from storage.db import create_database
from storage.migrate import current_revision, head_revision, migrate
from storage.models import Conversation, InboundEvent, Lease, Session, SourceRecord
from storage.repos import sessions
from storage.repos import source_records as source_repo
from storage.repos.source_records import NewRecord
from storage.search import SearchFilters
from storage.types import utcnow
from storage.urls import is_sqlite
from tests import databases
from tests.apps import make_settings, running_app
from tests.cli.test_commands import _env, _run
from tests.feishu_world import WorldFactory
from tests.waiting import wait_until


@pytest.fixture
async def restore_url(
    database_url: str, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[str]:
    """An empty database of the same kind as `database_url`, nothing in it, not even a schema."""
    if is_sqlite(database_url):
        yield databases.normalize_database_url(f"sqlite:///{tmp_path / 'restored' / 'maka.db'}")
        return
    server: str = request.getfixturevalue("postgres_server")
    url = await databases.create_postgres_database(server, migrated=False)
    try:
        yield url
    finally:
        await databases.drop_postgres_database(server, url)


def _settings(tmp_path: Path, name: str, url: str) -> Settings:
    return make_settings(tmp_path / name, url)


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    return lines[0]


async def _seed(url: str) -> None:
    db = create_database(url)
    try:
        async with db.write() as s:
            conv = Conversation(
                platform="feishu", chat_id="oc_ops", chat_type="group", name="ops",
                created_at=utcnow(),
            )  # fmt: skip
            s.add(conv)
            await s.flush()
            row = Session(
                name="staging deploys", state="active", labels=[], is_archived=False,
                conversation_id=conv.id, created_at=utcnow(),
            )  # fmt: skip
            s.add(row)
            await s.flush()
            await sessions.append_events(
                s, row.id, [("user", "nightly export takes 14 minutes", None)], utcnow()
            )
            await source_repo.insert_records(
                s,
                [
                    NewRecord(
                        source="email:INBOX", external_id="m1", scope="mail:INBOX",
                        text="Hengda is our packaging supplier", title="supplier",
                        sent_at=datetime(2024, 5, 1, tzinfo=UTC),
                    )
                ],
                utcnow(),
            )  # fmt: skip
            s.add(
                InboundEvent(
                    platform="feishu", message_id="om_kept", event_type="im.message.receive_v1",
                    chat_id="oc_ops", payload={"text": "hi"}, status="accepted",
                )
            )  # fmt: skip
    finally:
        await db.dispose()


async def _count(url: str, model: Any, *where: ColumnElement[bool]) -> int:
    db = create_database(url)
    try:
        async with db.read() as s:
            return int(await s.scalar(select(func.count()).select_from(model).where(*where)) or 0)
    finally:
        await db.dispose()


async def test_a_round_trip_keeps_messages_and_records_and_search_finds_them(
    database_url: str, restore_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await _seed(database_url)
    file = tmp_path / "maka.backup"

    assert await run_backup(_settings(tmp_path, "source", database_url), file) == 0
    assert f"at schema {head_revision()}" in capsys.readouterr().out
    restored = _settings(tmp_path, "restored", restore_url)
    assert await run_restore(restored, file, force=False) == 0

    assert "indexed 1 session messages, 1 source records" in capsys.readouterr().out
    assert await _count(restore_url, InboundEvent, InboundEvent.message_id == "om_kept") == 1
    assert await _count(restore_url, SourceRecord) == 1
    search = SearchService(open_index(restored))
    try:
        assert await search.search("14 minutes", SearchFilters(kinds=["session_user"]))
        assert await search.search("Hengda", SearchFilters(kinds=["source_mail"]))
    finally:
        await search.close()


async def test_restore_is_refused_while_maka_serve_runs_on_the_database(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = _settings(tmp_path, "live", database_url)
    file = tmp_path / "maka.backup"
    async with running_app(settings):
        live = Lease.name.startswith(HOST_LEASE_PREFIX)

        async def serving() -> bool:
            return await _count(database_url, Lease, live) > 0

        await wait_until(serving, what="the Host's liveness lease")
        assert await run_backup(settings, file) == 0  # a backup runs beside it
        capsys.readouterr()
        assert await run_restore(settings, file, force=True) == 1
    assert _one_line(capsys.readouterr().err).endswith("stop maka serve first")


async def test_restore_replaces_a_database_holding_data_only_with_force(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await _seed(database_url)
    settings = _settings(tmp_path, "here", database_url)
    file = tmp_path / "maka.backup"
    assert await run_backup(settings, file) == 0
    capsys.readouterr()

    assert await run_restore(settings, file, force=False) == 1
    assert "add --force" in _one_line(capsys.readouterr().err)
    assert await run_restore(settings, file, force=True) == 0
    assert await _count(database_url, InboundEvent, InboundEvent.message_id == "om_kept") == 1


async def test_a_backup_from_a_newer_schema_is_refused_in_one_line(
    database_url: str, restore_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = create_database(database_url)
    try:
        async with db.write() as s:
            await s.execute(text("UPDATE alembic_version SET version_num = '9999_future'"))
        file = tmp_path / "future.backup"
        assert await run_backup(_settings(tmp_path, "future", database_url), file) == 0
    finally:  # the PostgreSQL database is shared by the run's tests
        async with db.write() as s:
            await s.execute(text(f"UPDATE alembic_version SET version_num = '{head_revision()}'"))
        await db.dispose()
    capsys.readouterr()

    assert await run_restore(_settings(tmp_path, "restored", restore_url), file, force=True) == 1

    line = _one_line(capsys.readouterr().err)
    assert "9999_future is newer than this maka's" in line
    target = create_database(restore_url)
    try:
        assert is_sqlite(restore_url) or await current_revision(target) is None  # untouched
    finally:
        await target.dispose()


async def test_a_backup_from_an_older_schema_is_restored_and_migrated_up(
    restore_url: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if is_sqlite(restore_url):
        old_url = databases.normalize_database_url(f"sqlite:///{tmp_path / 'old.db'}")
    else:
        server: str = request.getfixturevalue("postgres_server")
        old_url = await databases.create_postgres_database(server, migrated=False)
    old = create_database(old_url)
    try:
        await migrate(old, "0027")
        file = tmp_path / "old.backup"
        assert await run_backup(_settings(tmp_path, "old", old_url), file) == 0
    finally:
        await old.dispose()
        if not is_sqlite(old_url):
            await databases.drop_postgres_database(server, old_url)

    assert await run_restore(_settings(tmp_path, "restored", restore_url), file, force=False) == 0

    target = create_database(restore_url)
    try:
        assert await current_revision(target) == head_revision() != "0027"
    finally:
        await target.dispose()


async def test_a_sqlite_backup_is_not_restored_into_postgresql(
    tmp_path: Path, sqlite_template: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "odd name?#.backup"
    url = databases.copy_sqlite(sqlite_template, tmp_path / "maka.db")
    assert await run_backup(_settings(tmp_path, "lite", url), file) == 0
    capsys.readouterr()
    pg = _settings(tmp_path, "pg", "postgresql://postgres@127.0.0.1:5432/nowhere")

    assert await run_restore(pg, file, force=True) == 1

    line = _one_line(capsys.readouterr().err)
    assert line.startswith("a sqlite backup cannot be restored into a postgresql database")


async def test_a_missing_pg_dump_is_named_in_one_line_with_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(backup_module, "PG_BIN_GLOB", str(tmp_path / "none" / "*" / "bin"))
    settings = _settings(tmp_path, "pg", "postgresql://postgres@127.0.0.1:5432/nowhere")

    assert await run_backup(settings, tmp_path / "maka.backup") == 1

    line = _one_line(capsys.readouterr().err)
    assert line.startswith("pg_dump not found") and "apt-get install postgresql-client" in line
    assert not (tmp_path / "maka.backup").exists()


async def test_the_maka_commands_back_up_and_refuse_to_overwrite_data_in_one_line(
    tmp_path: Path, sqlite_template: Path
) -> None:
    url = databases.copy_sqlite(sqlite_template, tmp_path / "data" / "maka.db")
    await _seed(url)
    env = _env(tmp_path, MAKA_DATABASE_URL=url)
    file = tmp_path / "maka.backup"

    code, out, err = await _run(["backup", str(file)], env)
    assert (code, err) == (0, ""), err
    assert out.startswith("backed up the sqlite database at schema")

    code, out, err = await _run(["restore", str(file)], env)
    assert code == 1 and "add --force" in _one_line(out + err)


async def test_a_backup_under_traffic_holds_every_message_acked_before_it_started(
    make_world: WorldFactory, database_url: str, restore_url: str, tmp_path: Path
) -> None:
    """A backup is one snapshot taken between its start and its end (SQLite's backup step,
    pg_dump's one transaction), so: every event Feishu got a 200 for before the backup started
    is in it, and nothing sent after it ended."""
    sent: list[str] = []  # message ids in the order their POST began
    acked: list[str] = []  # in the order their 200 came back
    stop = asyncio.Event()

    async with make_world() as world:

        async def traffic() -> None:
            while not stop.is_set():
                event = world.message(f"note {len(sent)}", chat_id="oc_dm", chat_type="p2p")
                sent.append(event["event"]["message"]["message_id"])
                status, _ = await world.events.post(event)
                if status == 200:
                    acked.append(sent[-1])

        sender = asyncio.create_task(traffic())
        try:

            async def some_acked() -> bool:
                return len(acked) >= 10

            await wait_until(some_acked, what="10 messages acked")
            acked_before = set(acked)  # this loop runs nothing else until the backup starts
            file = tmp_path / "live.backup"
            assert await run_backup(world.app.services.settings, file) == 0
            sent_before_end = set(sent)

            async def more_acked() -> bool:
                return len(acked) >= len(acked_before) + 5

            await wait_until(more_acked, what="traffic going on after the backup")
        finally:
            stop.set()
            await sender

    assert await run_restore(_settings(tmp_path, "fresh", restore_url), file, force=False) == 0
    db = create_database(restore_url)
    try:
        async with db.read() as s:
            restored = set((await s.scalars(select(InboundEvent.message_id))).all())
            live_hosts = await s.scalar(
                select(func.count())
                .select_from(Lease)
                .where(Lease.name.startswith(HOST_LEASE_PREFIX), Lease.expires_at > utcnow())
            )
    finally:
        await db.dispose()
    assert acked_before <= restored, sorted(acked_before - restored)
    assert restored <= sent_before_end, sorted(restored - sent_before_end)
    assert live_hosts == 0  # the copy does not look served: `maka serve` may start on it


async def test_a_restore_cut_short_midway_leaves_the_database_as_it_was(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The backup of an empty database, cut before its end: the restore fails in one line
    and the database still holds what it held, schema and rows."""
    settings = _settings(tmp_path, "here", database_url)
    whole = tmp_path / "empty.backup"
    assert await run_backup(settings, whole) == 0
    cut = tmp_path / "cut.backup"
    cut.write_bytes(whole.read_bytes()[: -64 if not is_sqlite(database_url) else 8192])
    await _seed(database_url)
    capsys.readouterr()

    assert await run_restore(settings, cut, force=True) == 1

    line = _one_line(capsys.readouterr().err)
    # PostgreSQL: the file's table of contents is whole, so pg_restore fails while loading
    assert is_sqlite(database_url) or line.startswith("pg_restore failed, target unchanged")
    assert await _count(database_url, InboundEvent, InboundEvent.message_id == "om_kept") == 1
    assert await _count(database_url, SourceRecord) == 1


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
async def test_a_file_that_is_no_backup_is_refused_in_one_line(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = (
        databases.normalize_database_url(f"sqlite:///{tmp_path / 'maka.db'}")
        if kind == "sqlite"
        else "postgresql://postgres@127.0.0.1:5432/nowhere"
    )
    settings = _settings(tmp_path, "here", url)
    notes = tmp_path / "notes.txt"
    notes.write_text("not a backup\n")
    damaged = tmp_path / "damaged.backup"  # the right first bytes, nothing sound after them
    magic = backup_module.SQLITE_MAGIC if kind == "sqlite" else backup_module.PG_DUMP_MAGIC
    damaged.write_bytes(magic + b"\x00garbage" * 200)
    folder = tmp_path / "a folder"
    folder.mkdir()

    assert await run_restore(settings, notes, force=True) == 1
    assert "is not a maka backup" in _one_line(capsys.readouterr().err)
    assert await run_restore(settings, damaged, force=True) == 1
    assert _one_line(capsys.readouterr().err).startswith(f"cannot read {damaged}")
    assert await run_restore(settings, tmp_path / "missing.backup", force=True) == 1
    assert "cannot read" in _one_line(capsys.readouterr().err)
    assert await run_restore(settings, folder, force=True) == 1
    assert "cannot read" in _one_line(capsys.readouterr().err)
    assert not (tmp_path / "maka.db").exists()


async def test_a_backup_into_a_folder_that_does_not_exist_fails_in_one_line(
    database_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "no such folder" / "maka.backup"

    assert await run_backup(_settings(tmp_path, "here", database_url), file) == 1

    assert _one_line(capsys.readouterr().err)
    assert not file.parent.exists()
