"""`maka backup FILE` and `maka restore FILE [--force]` (the copies themselves: storage.backup).

Backup runs beside `maka serve`. Restore does not: a running Host renews its liveness lease
(bot.host.workers) in the database, and a live one refuses the restore in one line. Restore
replaces the whole database, so one that holds any row needs --force; a PostgreSQL database
that does not exist yet is created (storage.pg_database), and dropped again if the restore
fails. A backup from a schema this code does not know (a newer maka) is refused; an older one
is restored, then migrated up.
Afterwards the Host leases the copy carried are lapsed (their claims are free at once, not
after a TTL) and the search index is rebuilt from the restored rows, so search shows what the
database holds and nothing else."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import inspect, select, text, update
from sqlalchemy.engine import make_url

from bot.cli.database import sqlite_file_must_exist
from bot.cli.search import rebuild
from bot.config import Settings
from bot.memory.search import SearchService, open_index
from storage.backup import (
    BackupError,
    BackupInfo,
    backup_postgres,
    backup_sqlite,
    read_backup,
    restore_postgres,
    restore_sqlite,
)
from storage.claims import HOST_LEASE_PREFIX
from storage.db import Database, create_database
from storage.migrate import head_revision, known_revisions, migrate
from storage.models import Lease
from storage.pg_database import drop_created_database, ensure_postgres_database
from storage.search import SearchError
from storage.types import utcnow
from storage.urls import is_sqlite, sqlite_file_of

SERVING = "stop maka serve first"


async def run_backup(settings: Settings, file: Path) -> int:
    url = settings.resolved_database_url
    try:
        if is_sqlite(url):
            sqlite_file_must_exist(url)
            await asyncio.to_thread(backup_sqlite, Path(sqlite_file_of(url)), file)
        else:
            await asyncio.to_thread(backup_postgres, url, file)
        info = await asyncio.to_thread(read_backup, file)
    except BackupError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"backed up the {info.kind} database at schema {info.revision or 'empty'} to {file}")
    return 0


@dataclass(frozen=True)
class Target:
    tables: list[str]
    has_rows: bool
    serving: tuple[str, datetime] | None  # a live Host: its instance id and lease expiry


async def run_restore(settings: Settings, file: Path, *, force: bool) -> int:
    url = settings.resolved_database_url
    created = False
    try:
        info = await asyncio.to_thread(read_backup, file)
        _check_backup(info, url)
        if not is_sqlite(url):
            created = await ensure_postgres_database(url)
            if created:
                print(f"created the database {make_url(url).database}: it did not exist")
        target = await _inspect_target(url)
        if target.serving:
            instance, until = target.serving
            raise BackupError(
                f"maka serve is running against this database (instance {instance}, alive "
                f"until {until:%H:%M:%S} UTC): {SERVING}"
            )
        if target.has_rows and not force:
            raise BackupError(
                "the database already holds data and a restore replaces all of it: "
                "add --force to do that"
            )
        if is_sqlite(url):
            await asyncio.to_thread(restore_sqlite, file, Path(sqlite_file_of(url)))
        else:
            await asyncio.to_thread(restore_postgres, url, file, target.tables)
    except BackupError as exc:
        if created:
            await drop_created_database(url)
        print(exc, file=sys.stderr)
        return 1
    except Exception:  # e.g. DatabaseNotReady, printed by bot.cli.main: nothing left behind
        if created:
            await drop_created_database(url)
        raise
    db = create_database(url)
    try:
        await migrate(db)  # a backup from an older schema comes up to this code's
        await _lapse_host_leases(db)
        search = SearchService(open_index(settings))
        try:
            done = await rebuild(db, search, tool_output=settings.index_tool_output)
        except (SearchError, RuntimeError) as exc:
            print(
                f"restored, but the search index rebuild failed ({exc}): run `maka search rebuild`",
                file=sys.stderr,
            )
            return 1
        finally:
            await search.close()
    finally:
        await db.dispose()
    print(
        f"restored {file} (schema {info.revision}, now {head_revision()}); indexed "
        f"{done.session_messages} session messages, {done.source_records} source records "
        f"and {done.digests} Session digests"
    )
    return 0


def _check_backup(info: BackupInfo, url: str) -> None:
    wanted = "sqlite" if is_sqlite(url) else "postgresql"
    if info.kind != wanted:
        raise BackupError(
            f"a {info.kind} backup cannot be restored into a {wanted} database "
            f"(MAKA_DATABASE_URL names a {wanted} one)"
        )
    if info.revision is None:
        raise BackupError("the backup holds no maka schema (no alembic_version row)")
    if info.revision not in known_revisions():
        raise BackupError(
            f"the backup's schema {info.revision} is newer than this maka's ({head_revision()}): "
            "restore it with the maka version that wrote it"
        )


async def _inspect_target(url: str) -> Target:
    if _no_sqlite_file(url):
        return Target(tables=[], has_rows=False, serving=None)
    db = create_database(url)
    try:
        await db.reach()
        async with db.engine.connect() as conn:
            tables: list[str] = await conn.run_sync(lambda c: inspect(c).get_table_names())
            has_rows = False
            for table in tables:
                if table == "alembic_version":
                    continue
                if (await conn.execute(text(f'SELECT 1 FROM "{table}" LIMIT 1'))).first():
                    has_rows = True
                    break
            serving = None
            if Lease.__tablename__ in tables:
                row = (
                    await conn.execute(
                        select(Lease.owner, Lease.expires_at)
                        .where(Lease.name.startswith(HOST_LEASE_PREFIX))
                        .where(Lease.expires_at > utcnow())
                        .limit(1)
                    )
                ).first()
                serving = (row[0], row[1]) if row else None
    finally:
        await db.dispose()
    return Target(tables=tables, has_rows=has_rows, serving=serving)


def _no_sqlite_file(url: str) -> bool:
    return is_sqlite(url) and not Path(sqlite_file_of(url)).exists()


async def _lapse_host_leases(db: Database) -> None:
    """The copy carries the liveness of the Hosts that ran when it was taken: lapsed, the
    claims they held are free at once, and the restored database does not look served."""
    async with db.write() as s:
        await s.execute(
            update(Lease)
            .where(Lease.name.startswith(HOST_LEASE_PREFIX))
            .values(expires_at=utcnow() - timedelta(seconds=1))
        )
