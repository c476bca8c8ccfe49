"""The engines and the two kinds of unit of work: `read()` and `write()` (on SQLite, sessions
that run their statements at once: `storage/sqlite_sessions.py`).

PostgreSQL runs many writers; uniqueness constraints and row locks keep them honest. SQLite
allows one writer at a time, so `write()` serializes writers inside the process with a lock
and opens them with BEGIN IMMEDIATE: a deferred transaction that reads first and writes later
could otherwise fail with SQLITE_BUSY_SNAPSHOT, which no busy timeout fixes.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar, cast

from sqlalchemy import Engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from storage.group_commit import GroupCommit
from storage.sqlite_inline import inline_creator
from storage.sqlite_sessions import InlineSession, begin_write, inline_engine
from storage.urls import is_sqlite, masked_database_url, sqlite_file_of

T = TypeVar("T")
P = TypeVar("P")
Operation = Callable[[AsyncSession], Awaitable[T]]
SQLITE_BUSY_TIMEOUT_MS = 15_000
GROUP_WRITERS = 2  # PostgreSQL: grouped-write transactions side by side
# PostgreSQL connections only `ack_write()` uses: ingest writes one batch at a time.
ACK_CONNECTIONS = 2
_WRITE_OPTION = "maka_write"
_SQLITE_PRAGMAS = ("PRAGMA journal_mode=WAL", "PRAGMA foreign_keys=ON", "PRAGMA synchronous=NORMAL")


@dataclass(frozen=True)
class Together(Generic[P, T]):
    """One caller's `part` of a write that a group runs as one set of statements for all of
    its kind: `kind(tx, parts)` writes the parts of every caller with the same `kind` in the
    group (a function defined once, at module level: it is the kind) and returns their
    results in order. Under load a group holds several turns' starts, replies and ends at
    once; run one by one, each paid its own statements (a round trip each on PostgreSQL).
    The parts of a kind must not depend on one another's writes (different conversations'
    turns), since they are written together."""

    kind: Callable[[AsyncSession, list[P]], Awaitable[list[T]]]
    part: P


class DatabaseNotReady(RuntimeError):
    """This process cannot use the database (unreachable, refused, schema out of date). The
    message is one line fit to print: its URL, if any, has the password masked."""


@dataclass
class Database:
    url: str
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    is_sqlite: bool
    # This process's mark on its wake-up notifications (bot/host/notify.py); on PostgreSQL
    # also in its connections' application_name, "maka@<mark>", where the triggers read it.
    mark: str
    _write_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _reads: async_sessionmaker[AsyncSession] | None = None  # PostgreSQL: see read()
    _acks: async_sessionmaker[AsyncSession] | None = None  # PostgreSQL: see ack_write()
    _ack_engine: AsyncEngine | None = None
    _inline: Engine | None = None  # SQLite: the Engine of the sessions (storage/sqlite_sessions)
    _folder_problem: str | None = None  # SQLite: why its file's folder could not be made
    _group: GroupCommit[Operation[Any] | Together[Any, Any], Any] | None = None

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @property
    def session_engine(self) -> Engine:
        """The synchronous Engine that `read()`'s and `write()`'s statements run on (its
        events see them): on SQLite `sqlite_sessions`' own, else the async engine's."""
        return self._inline if self._inline is not None else self.engine.sync_engine

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        """For reading only (what it writes may be kept or not). On PostgreSQL in autocommit:
        under READ COMMITTED each statement sees a snapshot of its own anyway, and a read then
        costs its statements' round trips, not a BEGIN and a ROLLBACK more."""
        async with (self._reads or self.sessions)() as tx:
            yield tx

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncSession]:
        """A transaction that commits on success and rolls back on error."""
        if self.is_sqlite:
            async with self._write_lock, self.sessions() as tx:
                await begin_write(
                    cast(InlineSession, tx),  # SQLite's sessions are (create_database)
                    {_WRITE_OPTION: True},
                    busy_timeout=SQLITE_BUSY_TIMEOUT_MS / 1000,
                )
                async with _commit_or_rollback(tx):
                    yield tx
        else:
            async with self.sessions() as tx, _commit_or_rollback(tx):
                yield tx

    @asynccontextmanager
    async def write_statement(self) -> AsyncIterator[AsyncSession]:
        """For a write that is one statement, atomic by itself (a claim: `storage.claims`).
        On PostgreSQL in autocommit: one round trip, not BEGIN, the statement and COMMIT.
        A second statement in it would commit on its own; use `write()` for more than one."""
        if self._reads is None:
            async with self.write() as tx:
                yield tx
        else:
            async with self._reads() as tx, _commit_or_rollback(tx):
                yield tx

    @asynccontextmanager
    async def ack_write(self) -> AsyncIterator[AsyncSession]:
        """`write()` on connections kept for what a webhook answer waits for (ingest). The
        Bot's turns and senders can hold every connection of the main pool at once, each for
        many turns of a busy event loop; an ack that queued behind them waited 60 ms on
        average, up to 400 ms, before its first statement. SQLite has no pool: `write()`."""
        if self._acks is None:
            async with self.write() as tx:
                yield tx
        else:
            async with self._acks() as tx, _commit_or_rollback(tx):
                yield tx

    async def grouped(self, operation: Operation[T] | Together[Any, T]) -> T:
        """`operation(tx)`'s result, run in a write transaction shared with the other grouped
        writes queued meanwhile (storage/group_commit.py says what an operation may do); a
        `Together` part's, written with the others of its kind there. Not from inside a
        `write()` on SQLite: the group would wait for the lock its caller holds, as a nested
        `write()` would."""
        if self._group is None:
            parallel = 1 if self.is_sqlite else GROUP_WRITERS
            self._group = GroupCommit(self._run_together, what="grouped writes", parallel=parallel)
        result: T = await self._group.run(operation)
        return result

    async def _run_together(
        self, operations: list[Operation[Any] | Together[Any, Any]]
    ) -> list[Any]:
        """In queue order, but each kind of `Together` at its first part's place, all of its
        parts at once."""
        steps: list[int | Callable[..., Awaitable[list[Any]]]] = []
        of_kind: dict[Callable[..., Awaitable[list[Any]]], list[int]] = {}
        for i, operation in enumerate(operations):
            if not isinstance(operation, Together):
                steps.append(i)
            elif operation.kind in of_kind:
                of_kind[operation.kind].append(i)
            else:
                of_kind[operation.kind] = [i]
                steps.append(operation.kind)
        results: list[Any] = [None] * len(operations)
        async with self.write() as tx:
            for step in steps:
                if isinstance(step, int):
                    plain = operations[step]
                    assert not isinstance(plain, Together)
                    results[step] = await plain(tx)
                    continue
                members = of_kind[step]
                parts = [operations[i].part for i in members]  # type: ignore[union-attr]
                for i, result in zip(members, await step(tx, parts), strict=True):
                    results[i] = result
        return results

    async def ping(self) -> None:
        async with self.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))

    async def problem(self, deadline: float) -> str | None:
        """Why the database cannot be used right now, in one line; None if a ping on a new
        connection is answered within `deadline` seconds. Asked after a failure, to tell an
        outage (wait for it) from a bug (report it)."""
        try:
            async with asyncio.timeout(deadline):
                await self.ping()
        except TimeoutError:
            return f"no answer to a ping within {deadline:g} s"
        except Exception as exc:
            return describe_error(exc, self.url)
        return None

    async def reach(self) -> None:
        """Connect once, at start-up: raise DatabaseNotReady (one line) when that fails."""
        try:
            await self.ping()
        except Exception as exc:
            raise DatabaseNotReady(
                f"cannot reach the database {masked_database_url(self.url)}: "
                f"{self._folder_problem or describe_error(exc, self.url)}"
            ) from exc

    async def dispose(self) -> None:
        if self._group is not None:
            await self._group.close()
        await self.engine.dispose()
        if self._inline is not None:
            self._inline.dispose()
        if self._ack_engine is not None:
            await self._ack_engine.dispose()


@asynccontextmanager
async def _commit_or_rollback(tx: AsyncSession) -> AsyncIterator[None]:
    try:
        yield
    except BaseException:
        await tx.rollback()
        raise
    await tx.commit()


def lost_connection(exc: BaseException) -> str | None:
    """A pooled connection that died with the server (a ping on a new one may already
    succeed again): SQLAlchemy marks the error and drops the pool's connections."""
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return f"the connection was lost ({describe_error(exc)})"
    return None


def describe_error(exc: BaseException, url: str | None = None) -> str:
    """`Type: first line` of a driver error, without SQLAlchemy's wrapping, at most 300
    characters, and never the password of `url` (a well-formed URL)."""
    if isinstance(exc, DBAPIError) and exc.orig is not None:
        exc = exc.orig.__cause__ or exc.orig  # asyncpg's own error behind the adapter's
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    password = make_url(url).password if url else None
    if password:
        text = text.replace(str(password), "***")
    return text[:300]


def create_database(url: str, *, pool_size: int = 10, **engine_kwargs: Any) -> Database:
    sqlite = is_sqlite(url)
    reads, acks, ack_engine = None, None, None
    mark = secrets.token_hex(4)
    sessions: async_sessionmaker[AsyncSession] | None = None
    inline: Engine | None = None
    folder_problem = None
    if sqlite:
        path = sqlite_file_of(url)
        folder_problem = _make_folder_of(path)
        engine = _sqlite_engine(path, url, **engine_kwargs)
        inline = inline_engine(path, pragmas=_SQLITE_PRAGMAS)
        _begin_as_asked(inline)
        sessions = async_sessionmaker(
            class_=InlineSession, expire_on_commit=False, sync_engine=inline
        )
    else:
        connect_args = engine_kwargs.pop("connect_args", {})
        settings = {**connect_args.get("server_settings", {}), "application_name": f"maka@{mark}"}
        engine_kwargs["connect_args"] = {**connect_args, "server_settings": settings}
        # No pre-ping: it costs a round trip per checkout on the ingest hot path. A connection
        # that died is invalidated on its first error; callers retry (Feishu redelivers, the
        # Host's workers back off) and recycling keeps idle connections fresh.
        engine = create_async_engine(
            url, pool_size=pool_size, max_overflow=pool_size, pool_recycle=1800, **engine_kwargs
        )
        ack_engine = create_async_engine(
            url, pool_size=ACK_CONNECTIONS, max_overflow=0, pool_recycle=1800, **engine_kwargs
        )
        acks = async_sessionmaker(ack_engine, expire_on_commit=False)
        reads = async_sessionmaker(
            engine.execution_options(isolation_level="AUTOCOMMIT"), expire_on_commit=False
        )
    if sessions is None:
        sessions = async_sessionmaker(engine, expire_on_commit=False)
    return Database(
        url=url,
        engine=engine,
        sessions=sessions,
        is_sqlite=sqlite,
        _reads=reads,
        _acks=acks,
        _ack_engine=ack_engine,
        _inline=inline,
        _folder_problem=folder_problem,
        mark=mark,
    )


def _make_folder_of(path: str) -> str | None:
    """Make the folder of a SQLite file; what went wrong, if anything. Connecting then fails
    with SQLite's "unable to open database file", which does not say this."""
    folder = Path(path).parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"cannot make its folder {folder}: {exc.strerror or type(exc).__name__}"
    return None


def _sqlite_engine(path: str, url: str, **engine_kwargs: Any) -> AsyncEngine:
    # On the loop's own thread (storage/sqlite_inline.py), in autocommit mode: BEGIN is ours
    # (see the module docstring), and waiting out another process's lock is its retry's.
    engine = create_async_engine(
        url,
        async_creator=inline_creator(path, SQLITE_BUSY_TIMEOUT_MS / 1000),
        **engine_kwargs,
    )

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        cursor = dbapi_conn.cursor()
        for pragma in _SQLITE_PRAGMAS:
            cursor.execute(pragma)
        cursor.close()

    _begin_as_asked(engine.sync_engine)
    return engine


def _begin_as_asked(engine: Engine) -> None:
    """BEGIN is ours on SQLite (its connections are in autocommit mode): IMMEDIATE for a
    write, so that it takes the write lock before it reads."""

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        immediate = conn.get_execution_options().get(_WRITE_OPTION, False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")
