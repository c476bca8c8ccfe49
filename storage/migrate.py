"""Schema migrations (Alembic), run on a connection we own so they work inside a running loop."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection

from storage.db import Database, DatabaseNotReady

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def alembic_config(connection: Connection | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


async def migrate(db: Database, revision: str = "head") -> None:
    async with db.engine.begin() as conn:
        await conn.run_sync(lambda sync: _upgrade(sync, revision))


def _upgrade(connection: Connection, revision: str) -> None:
    # Checked on the migrating connection itself, so nothing is written to a newer schema.
    refuse_unknown(MigrationContext.configure(connection).get_current_revision())
    command.upgrade(alembic_config(connection), revision)


async def current_revision(db: Database) -> str | None:
    async with db.engine.connect() as conn:
        return await conn.run_sync(
            lambda sync: MigrationContext.configure(sync).get_current_revision()
        )


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


class SchemaOutOfDate(DatabaseNotReady):
    pass


class SchemaTooNew(DatabaseNotReady):
    pass


def known_revisions() -> list[str]:
    """Every revision this version ships, oldest first."""
    script = ScriptDirectory.from_config(alembic_config())
    return [rev.revision for rev in reversed(list(script.walk_revisions()))]


def refuse_unknown(current: str | None) -> None:
    """A schema this version has never heard of was written by a newer version (or a branch):
    running on it or migrating it would corrupt what that version stored."""
    if current is not None and current not in known_revisions():
        raise SchemaTooNew(
            f"database schema is at {current}, which this version does not know (it knows up to "
            f"{head_revision()}): a newer version migrated it; run that version or restore a "
            "backup taken before the upgrade"
        )


async def require_current_schema(db: Database) -> None:
    """For commands that only read: they never migrate, so the schema must be current."""
    current, head = await current_revision(db), head_revision()
    refuse_unknown(current)
    if current != head:
        fix = "`maka serve` migrates it" if db.is_sqlite else "run `maka migrate`"
        raise SchemaOutOfDate(
            f"database schema is at {current or 'empty'}, this version needs {head}: {fix}"
        )


async def prepare_schema(db: Database) -> None:
    """SQLite (one process) migrates itself; PostgreSQL is migrated by `maka migrate` (the
    Helm hook), so replicas never race each other through a migration."""
    if db.is_sqlite:
        await migrate(db)
        return
    current, head = await current_revision(db), head_revision()
    refuse_unknown(current)
    if current != head:
        raise SchemaOutOfDate(
            f"database schema is at {current or 'empty'}, this version needs {head}: "
            "run `maka migrate`"
        )
