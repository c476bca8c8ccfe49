"""INSERT … ON CONFLICT for the dialect at hand (PostgreSQL and SQLite share the syntax)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession


def insert_for(tx: AsyncSession, table: Any) -> Any:
    dialect = tx.get_bind().dialect.name
    return (postgresql.insert if dialect == "postgresql" else sqlite.insert)(table)
