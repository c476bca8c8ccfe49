"""INSERT … ON CONFLICT for the dialect at hand (PostgreSQL and SQLite share the syntax)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

_INSERTS: dict[str, Callable[[Any], Any]] = {
    "postgresql": postgresql.insert,
    "sqlite": sqlite.insert,
}


def _dialect(tx: AsyncSession) -> str:
    name = tx.get_bind().dialect.name
    return name if name == "postgresql" else "sqlite"


def insert_for(tx: AsyncSession, table: Any) -> Any:
    return _INSERTS[_dialect(tx)](table)


def per_dialect(build: Callable[[Callable[[Any], Any]], Any]) -> Callable[[AsyncSession], Any]:
    """An upsert the hot path runs, built once for each dialect at import (`build` gets that
    dialect's `insert`) and bound per call: the one for `tx`'s dialect."""
    built = {name: build(insert) for name, insert in _INSERTS.items()}
    return lambda tx: built[_dialect(tx)]
