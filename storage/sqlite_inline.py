"""SQLite run on the event loop's own thread, behind SQLAlchemy's aiosqlite dialect.

aiosqlite runs every call (a cursor, an execute, a fetch, a close, BEGIN, COMMIT) on a thread
of its own and hands the result back through the loop: about ten thread hops for a one-row
read, 2-3 ms of CPU where SQLite itself needs a few microseconds. Measured on the Bot's
path, SQLite cost twice PostgreSQL's CPU per message for that alone. These connections
satisfy the interface the dialect expects of aiosqlite (`async_creator`), but run each call
at once, on the loop's thread.

What a thread gave, and what stands in for it here:
* waiting for a lock held by another process (a `maka` command writing) must not block the
  loop: the busy timeout is 0, and a statement SQLite says is busy is retried after an
  asyncio sleep, up to the old busy timeout, where SQLite allows a retry (BEGIN, COMMIT, or
  outside a transaction; inside one, a busy statement fails at once, as SQLite advises);
* a WAL checkpoint writes and syncs the database file: automatic checkpoints are off on these
  connections, and every CHECKPOINT_EVERY commits a passive checkpoint runs in a worker
  thread on a connection of its own.
Inside this process writers never wait for each other: `Database.write()` takes turns.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

BUSY_BACKOFF = (0.001, 0.005, 0.02, 0.05)
CHECKPOINT_EVERY = 200
_T = TypeVar("_T")


class InlineCursor:
    def __init__(self, connection: InlineConnection) -> None:
        self._owner = connection
        self._cursor = connection._conn.cursor()

    async def __aenter__(self) -> InlineCursor:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        self._cursor.close()

    @property
    def description(self) -> Any:
        return self._cursor.description

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    @property
    def lastrowid(self) -> int | None:
        return self._cursor.lastrowid

    @property
    def arraysize(self) -> int:
        return self._cursor.arraysize

    @arraysize.setter
    def arraysize(self, value: int) -> None:
        self._cursor.arraysize = value

    async def execute(self, sql: str, parameters: Sequence[Any] | dict[str, Any] = ()) -> None:
        await self._owner._run(sql, lambda: self._cursor.execute(sql, parameters))

    async def executemany(self, sql: str, seq: Iterable[Any]) -> None:
        rows = list(seq)  # a retry must see the same rows
        await self._owner._run(sql, lambda: self._cursor.executemany(sql, rows))

    async def fetchone(self) -> Any:
        return self._cursor.fetchone()

    async def fetchmany(self, size: int | None = None) -> list[Any]:
        return self._cursor.fetchmany(size if size is not None else self._cursor.arraysize)

    async def fetchall(self) -> list[Any]:
        return self._cursor.fetchall()

    async def close(self) -> None:
        self._cursor.close()

    async def nextset(self) -> None:
        return None

    async def setinputsizes(self, *_sizes: Any) -> None:
        return None


class InlineConnection:
    """What SQLAlchemy's aiosqlite adapter calls on an aiosqlite connection."""

    def __init__(self, path: str, busy_timeout: float) -> None:
        self._path = path
        self._busy_timeout = busy_timeout
        self._conn = sqlite3.connect(path, timeout=0, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA wal_autocheckpoint=0")
        self._connection: sqlite3.Connection | None = self._conn  # the adapter checks it

    @property
    def isolation_level(self) -> str | None:
        return self._conn.isolation_level

    def cursor(self) -> InlineCursor:
        return InlineCursor(self)

    async def create_function(self, *args: Any, **kwargs: Any) -> None:
        self._conn.create_function(*args, **kwargs)

    async def commit(self) -> None:
        await self._run("COMMIT", self._conn.commit)

    async def rollback(self) -> None:
        self._conn.rollback()

    async def close(self) -> None:
        self.stop()

    def stop(self) -> None:  # also the adapter's forced terminate
        if self._connection is not None:
            self._connection = None
            self._conn.close()

    async def _run(self, sql: str, call: Callable[[], _T]) -> _T:
        """`call` now; when SQLite says busy and a retry is allowed, again after a sleep."""
        may_retry = not self._conn.in_transaction or _is_begin_or_commit(sql)
        result = await retried_while_busy(call, self._busy_timeout, may_retry=may_retry)
        if sql == "COMMIT":
            _checkpoints.committed(self._path)
        return result


async def retried_while_busy(
    call: Callable[[], _T],
    busy_timeout: float,
    *,
    may_retry: bool = True,
    before_retry: Callable[[], object] = lambda: None,
) -> _T:
    """`call()`; while SQLite says busy (its own error, or SQLAlchemy's around it) and a
    retry is allowed, `before_retry()` and `call()` again after an asyncio sleep, for up to
    `busy_timeout` seconds; then SQLite's error."""
    deadline = time.monotonic() + busy_timeout
    attempt = 0
    while True:
        try:
            return call()
        except Exception as exc:
            if not (may_retry and _is_busy(exc)) or time.monotonic() >= deadline:
                raise
            before_retry()
        await asyncio.sleep(BUSY_BACKOFF[min(attempt, len(BUSY_BACKOFF) - 1)])
        attempt += 1


def _is_busy(exc: BaseException) -> bool:
    error = getattr(exc, "orig", exc)  # SQLAlchemy's wrapping keeps the driver's as `orig`
    return (
        isinstance(error, sqlite3.OperationalError)
        and getattr(error, "sqlite_errorcode", None) == sqlite3.SQLITE_BUSY
    )


def _is_begin_or_commit(sql: str) -> bool:
    return sql.lstrip()[:6].upper().startswith(("BEGIN", "COMMIT"))


class _Checkpoints:
    """A passive WAL checkpoint in a worker thread every CHECKPOINT_EVERY commits to a file."""

    def __init__(self) -> None:
        self._commits: dict[str, int] = {}
        self._running: dict[str, asyncio.Future[None]] = {}

    def committed(self, path: str) -> None:
        count = self._commits.get(path, 0) + 1
        self._commits[path] = count
        running = self._running.get(path)
        if count >= CHECKPOINT_EVERY and (running is None or running.done()):
            self._commits[path] = 0
            self._running[path] = asyncio.get_running_loop().run_in_executor(
                None, _checkpoint, path
            )


def _checkpoint(path: str) -> None:
    # A checkpoint that fails (busy, a full disk) leaves the WAL to the next one: nothing is lost.
    try:
        conn = sqlite3.connect(path, timeout=1, isolation_level=None)
    except sqlite3.Error:
        return
    try:
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
    except sqlite3.Error:
        pass
    finally:
        conn.close()


_checkpoints = _Checkpoints()


def inline_creator(path: str, busy_timeout: float) -> Callable[[], Any]:
    """`async_creator` for `create_async_engine`: one InlineConnection per pool connection."""

    async def connect() -> InlineConnection:
        return InlineConnection(path, busy_timeout)

    return connect
