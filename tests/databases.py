"""Test databases: a migrated SQLite file per test (copied from a template migrated once), and
one PostgreSQL database per test run, truncated between tests."""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
from pathlib import Path

import asyncpg
from sqlalchemy.engine import make_url

from storage.db import create_database
from storage.migrate import migrate
from storage.models import Base
from storage.urls import asyncpg_dsn, normalize_database_url

DEFAULT_PG_URL = "postgresql://postgres@127.0.0.1:5432/test"


def postgres_base_url() -> str:
    return normalize_database_url(os.environ.get("MAKA_TEST_DATABASE_URL", DEFAULT_PG_URL))


async def postgres_reachable(url: str) -> str | None:
    """None if reachable, else why not."""
    try:
        conn = await asyncio.wait_for(asyncpg.connect(asyncpg_dsn(url)), 5)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    await conn.close()
    return None


def with_database(url: str, name: str) -> str:
    return make_url(url).set(database=name).render_as_string(hide_password=False)


async def create_postgres_database(base_url: str, migrated: bool = True) -> str:
    name = f"maka_test_{os.getpid()}_{secrets.token_hex(3)}"
    conn = await asyncpg.connect(asyncpg_dsn(base_url))
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    url = with_database(base_url, name)
    if migrated:
        db = create_database(url)
        try:
            await migrate(db)
        finally:
            await db.dispose()
    return url


async def drop_postgres_database(base_url: str, url: str) -> None:
    name = make_url(url).database
    conn = await asyncpg.connect(asyncpg_dsn(base_url))
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


async def truncate_postgres(url: str) -> None:
    tables = ", ".join(f'"{t.name}"' for t in Base.metadata.sorted_tables)
    conn = await asyncpg.connect(asyncpg_dsn(url))
    try:
        await conn.execute(f"TRUNCATE {tables} RESTART IDENTITY CASCADE")
    finally:
        await conn.close()


async def migrated_sqlite_template(path: Path) -> Path:
    db = create_database(normalize_database_url(f"sqlite:///{path}"))
    try:
        await migrate(db)
    finally:
        await db.dispose()
    return path


def copy_sqlite(template: Path, target: Path) -> str:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, target)
    return normalize_database_url(f"sqlite:///{target}")
