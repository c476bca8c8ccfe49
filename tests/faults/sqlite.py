"""The embedded SQLite database of a one-replica world, read the way the fault world reads its
PostgreSQL cluster: the same SQL (`$1` placeholders, `->>` on JSON columns, which SQLite has
had since 3.38), the same row shapes (aware UTC datetimes where the product stores them).

The replica creates and migrates the file itself (`maka serve` does on SQLite); the reader
opens it read-only, one connection per query, which WAL lets run beside the replica's writer.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

PLACEHOLDER = re.compile(r"\$(\d+)")
# How SQLAlchemy stores a DateTime on SQLite (storage/types.py: naive, in UTC).
STORED_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?")
BUSY_TIMEOUT = 5.0


class EmbeddedDatabase:
    """`await db.query(sql, *args)`: a list of dict rows."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def url(self) -> str:
        return f"sqlite:///{self.path}"

    async def query(self, sql: str, *args: Any) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self._query, sql, args)

    def _query(self, sql: str, args: tuple[Any, ...]) -> list[dict[str, Any]]:
        if not self.path.exists():  # the replica has not created it yet
            raise sqlite3.OperationalError(f"no database at {self.path} yet")
        conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT)
        try:
            cursor = conn.execute(PLACEHOLDER.sub(r"?\1", sql), [_bind(a) for a in args])
            names = [d[0] for d in cursor.description or ()]
            return [dict(zip(names, map(_value, row), strict=True)) for row in cursor.fetchall()]
        finally:
            conn.close()

    def log_tail(self, lines: int = 30) -> str:
        return f"(embedded SQLite at {self.path}: no server log)"


def _bind(value: Any) -> Any:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("naive datetime: pass aware UTC datetimes")
        return value.astimezone(UTC).replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(value, list | tuple | set):
        raise TypeError("array parameters are PostgreSQL's (ANY($1)); not on SQLite")
    return value


def _value(value: Any) -> Any:
    if isinstance(value, str) and STORED_DATETIME.fullmatch(value):
        return datetime.fromisoformat(value).replace(tzinfo=UTC)
    return value
