"""SQLite sessions that run their statements at once, on the loop's thread, without
SQLAlchemy's asyncio bridge.

`sqlite_inline` already runs SQLite on the loop's thread, but behind the aiosqlite dialect:
every session call is a greenlet spawned, and every driver call inside it (a cursor, an
execute, a fetch, BEGIN, COMMIT) a switch out to the loop and back, for work that never
waits. A write transaction with two ORM reads took ~890 µs of CPU through it, ~520 µs
through these sessions (~300-350 µs on a bare synchronous Session; raw sqlite3, ~10 µs).

So the sessions of a SQLite Database are `InlineSession`s: AsyncSessions (every caller and
type stays as it is) whose hot methods call their synchronous Session directly, on an Engine
of plain sqlite3 connections set up as `sqlite_inline`'s are. Any method not overridden here
still works: it runs in a greenlet as AsyncSession's do, and nothing in it ever switches.

What the bridge's connections did that these must too:
* rows are read at execute, as the aiosqlite adapter's cursor does (`_BufferedCursor`), so
  a result read after its session has ended is read from memory, never from a cursor
  whose statement a rollback may have reset;
* another process's write lock is waited out without blocking the loop: a connection's
  busy timeout is 0, and `begin_write` retries BEGIN IMMEDIATE after an asyncio sleep. Once
  a write holds the lock, nothing it does waits for another writer (WAL: readers never block
  it, and its COMMIT has no lock left to take), so the retry at BEGIN is the only one; were
  SQLite ever to say busy later, the write fails with its error and is rolled back whole;
* several sessions are open at once (each task's), so each has a connection of its own, and
  a checkout never waits: a wait would block the loop whose tasks hold the others;
* commits are counted towards the passive checkpoints `sqlite_inline` runs off the loop.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Engine, create_engine, util
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.ext.asyncio.session import _EXECUTE_OPTIONS  # AsyncSession's own: rows read whole
from sqlalchemy.pool import QueuePool

from storage import sqlite_inline
from storage.sqlite_inline import retried_while_busy


class _BufferedCursor(sqlite3.Cursor):
    """Reads a statement's rows when it runs, as the aiosqlite adapter's cursor did."""

    _rows: list[Any]
    _at: int

    def execute(self, sql: str, parameters: Any = (), /) -> _BufferedCursor:
        super().execute(sql, parameters)
        self._rows, self._at = (super().fetchall(), 0) if self.description else ([], 0)
        return self

    def executemany(self, sql: str, seq: Any, /) -> _BufferedCursor:
        super().executemany(sql, seq)
        self._rows, self._at = [], 0
        return self

    def fetchone(self) -> Any:
        if self._at >= len(self._rows):
            return None
        self._at += 1
        return self._rows[self._at - 1]

    def fetchmany(self, size: int | None = None) -> list[Any]:
        end = self._at + (self.arraysize if size is None else size)
        rows, self._at = self._rows[self._at : end], min(end, len(self._rows))
        return rows

    def fetchall(self) -> list[Any]:
        rows, self._at = self._rows[self._at :], len(self._rows)
        return rows


class _Connection(sqlite3.Connection):
    path = ""

    def cursor(self, factory: Any = _BufferedCursor) -> Any:
        return super().cursor(factory)

    def commit(self) -> None:
        super().commit()
        # Counted once committed: a checkpoint begun before would miss this commit's pages.
        sqlite_inline._checkpoints.committed(self.path)  # looked up now: tests swap it


def inline_engine(path: str, *, pragmas: Sequence[str]) -> Engine:
    """An Engine of sqlite3 connections to `path` in autocommit mode (BEGIN is the
    session's), with `pragmas` run on each, a busy timeout of 0 and no automatic
    checkpoints (`sqlite_inline` runs them off the loop). A connection per session: a
    session on the loop's thread is one task's, and several are open at once."""

    def connect() -> sqlite3.Connection:
        conn = sqlite3.connect(
            path, timeout=0, isolation_level=None, check_same_thread=False, factory=_Connection
        )
        conn.path = path
        for pragma in (*pragmas, "PRAGMA wal_autocheckpoint=0"):
            conn.execute(pragma)
        return conn

    # Never a wait for a connection: a checkout that waited would stop the loop whose
    # sessions hold the others (the async engine's pool awaited; this one would block).
    return create_engine(
        f"sqlite:///{path}", creator=connect, poolclass=QueuePool, pool_size=20, max_overflow=-1
    )


def _at_once(name: str) -> Any:
    """AsyncSession's `name` (execute, scalar, scalars), run on the synchronous Session with
    the execution options AsyncSession adds."""

    async def method(
        self: InlineSession,
        statement: Any,
        params: Any = None,
        *,
        execution_options: Any = util.EMPTY_DICT,
        bind_arguments: Any = None,
        **kw: Any,
    ) -> Any:
        options = (
            util.immutabledict(execution_options).union(_EXECUTE_OPTIONS)
            if execution_options
            else _EXECUTE_OPTIONS
        )
        call = getattr(self.sync_session, name)
        return call(
            statement, params, execution_options=options, bind_arguments=bind_arguments, **kw
        )

    method.__name__ = method.__qualname__ = name
    return method


class InlineSession(AsyncSession):
    """An AsyncSession whose statements run at once on `sync_engine` (see the module
    docstring)."""

    def __init__(self, *, sync_engine: Engine, **kw: Any) -> None:
        super().__init__(**kw)
        self.sync_session.bind = sync_engine

    execute = _at_once("execute")
    scalar = _at_once("scalar")
    scalars = _at_once("scalars")

    async def get(self, entity: Any, ident: Any, **kw: Any) -> Any:
        return self.sync_session.get(entity, ident, **kw)

    async def flush(self, objects: Sequence[Any] | None = None) -> None:
        self.sync_session.flush(objects)

    async def commit(self) -> None:
        self.sync_session.commit()

    async def rollback(self) -> None:
        self.sync_session.rollback()

    async def close(self) -> None:
        self.sync_session.close()

    async def __aexit__(self, type_: Any, value: Any, traceback: Any) -> None:
        self.sync_session.close()


async def begin_write(tx: InlineSession, options: dict[str, Any], *, busy_timeout: float) -> None:
    """Begin `tx`'s write transaction (BEGIN IMMEDIATE, by the engine's begin event for
    `options`), waiting out another process's write lock with asyncio sleeps, up to
    `busy_timeout` seconds; then SQLite's own error."""
    await retried_while_busy(
        lambda: tx.sync_session.connection(execution_options=options),
        busy_timeout,
        before_retry=tx.sync_session.rollback,  # the connection goes back; the next try takes one
    )
