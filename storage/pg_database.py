"""The PostgreSQL database a URL names, created when it is missing (a restore onto a fresh
server), the way `createdb` does it: through the server's maintenance database (`postgres`,
else `template1`) with the URL's own role, so the new database is that role's.

Every failure is a `BackupError` whose message is one line."""

from __future__ import annotations

import asyncio
import getpass
import os

import asyncpg
from sqlalchemy.engine import make_url

from storage.backup import BackupError
from storage.db import describe_error
from storage.urls import asyncpg_dsn, masked_database_url

MAINTENANCE_DATABASES = ("postgres", "template1")
CONNECT_TIMEOUT = 10.0


async def ensure_postgres_database(url: str) -> bool:
    """True when this call created the database `url` names; False when it was there."""
    if await _exists(url):
        return False
    u = make_url(url)
    # libpq's default role when the URL names none: PGUSER, else the system user
    name, role = u.database or "", u.username or os.environ.get("PGUSER") or getpass.getuser()
    conn = await _maintenance_connection(url, name, role)
    try:
        await conn.execute(f"CREATE DATABASE {_quoted(name)}")
    except asyncpg.DuplicateDatabaseError:
        return False  # created meanwhile by someone else: not ours to drop on failure
    except asyncpg.InsufficientPrivilegeError:
        raise BackupError(_create_it_yourself(name, role, "may not create databases")) from None
    except asyncpg.PostgresError as exc:
        raise BackupError(
            f"creating the database {name} failed: {describe_error(exc, url)}"
        ) from None
    finally:
        await conn.close()
    return True


async def drop_created_database(url: str) -> None:
    """Undo `ensure_postgres_database`'s creation after a failed restore: the server is left
    as it was. Only for a database this process created, so nothing stored is lost. Best
    effort: the restore's own failure is the line to show, and an empty database left behind
    is harmless (the next restore finds it there)."""
    u = make_url(url)
    try:
        conn = await _maintenance_connection(url, u.database or "", u.username or "")
        try:
            await conn.execute(f"DROP DATABASE IF EXISTS {_quoted(u.database or '')}")
        finally:
            await conn.close()
    except (BackupError, OSError, asyncpg.PostgresError):
        pass


async def _exists(url: str) -> bool:
    try:
        conn = await asyncio.wait_for(asyncpg.connect(asyncpg_dsn(url)), CONNECT_TIMEOUT)
    except asyncpg.InvalidCatalogNameError:
        return False
    except (OSError, TimeoutError, asyncpg.PostgresError) as exc:
        raise BackupError(
            f"cannot reach the database {masked_database_url(url)}: {describe_error(exc, url)}"
        ) from None
    await conn.close()
    return True


async def _maintenance_connection(url: str, name: str, role: str) -> asyncpg.Connection:
    problem = ""
    for maintenance in MAINTENANCE_DATABASES:
        dsn = asyncpg_dsn(make_url(url).set(database=maintenance))
        try:
            conn: asyncpg.Connection = await asyncio.wait_for(asyncpg.connect(dsn), CONNECT_TIMEOUT)
        except (OSError, TimeoutError, asyncpg.PostgresError) as exc:
            problem = problem or describe_error(exc, url)
            continue
        return conn
    reason = f"cannot connect to the server's postgres database ({problem}) to create it"
    raise BackupError(_create_it_yourself(name, role, reason))


def _create_it_yourself(name: str, role: str, reason: str) -> str:
    return (
        f"the database {name} does not exist and {role} {reason}: as a role that may, run "
        f"CREATE DATABASE {_quoted(name)} OWNER {_quoted(role)}; then restore again"
    )


def _quoted(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'
