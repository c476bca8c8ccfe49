"""How a `maka` command opens the database: one line on failure (`DatabaseNotReady`, printed
by `bot.cli.main`), and a command that only reads never writes, not even a new SQLite file
or a migration."""

from __future__ import annotations

from pathlib import Path

from bot.config import Settings
from storage.db import Database, DatabaseNotReady, create_database
from storage.migrate import prepare_schema, require_current_schema
from storage.urls import is_sqlite, sqlite_file_of


async def open_database(settings: Settings, *, read_only: bool) -> Database:
    url = settings.resolved_database_url
    if read_only:
        sqlite_file_must_exist(url)
    db = create_database(url)
    try:
        await db.reach()
        if read_only:
            await require_current_schema(db)
        else:
            await prepare_schema(db)
    except BaseException:
        await db.dispose()
        raise
    return db


def sqlite_file_must_exist(url: str) -> None:
    if not is_sqlite(url):
        return
    path = Path(sqlite_file_of(url))
    if not path.exists():
        raise DatabaseNotReady(f"no database at {path} yet: `maka serve` creates it")
