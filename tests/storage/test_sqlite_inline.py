"""SQLite on the loop's thread (storage/sqlite_inline.py): another process's lock is waited
out without stopping the loop, a lock never freed fails with SQLite's own error, checkpoints
reach the database file, and the Bot's claim reads only waiting inbox items."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

import pytest
from sqlalchemy import text

from storage import sqlite_inline
from storage.db import Database
from storage.sqlite_inline import InlineConnection
from storage.types import utcnow
from tests.storage.other_writer import OtherProcessWriter
from tests.waiting import wait_until


@pytest.fixture
def path_of(sqlite_db: Database) -> str:
    path = sqlite_db.engine.url.database
    assert path
    return path


async def test_a_write_waits_out_another_process_lock_while_the_loop_keeps_serving(
    sqlite_db: Database, path_of: str
) -> None:
    async def write() -> None:
        async with sqlite_db.write() as tx:
            await tx.execute(
                text(
                    "INSERT INTO leases (name, owner, expires_at, acquired_at) "
                    "VALUES ('ours', 'serve', '2030-01-01', '2026-01-01')"
                )
            )

    with OtherProcessWriter(path_of) as other:
        pending = asyncio.create_task(write())
        await asyncio.sleep(0)  # it reaches BEGIN IMMEDIATE and finds the lock taken
        async with sqlite_db.read() as tx:  # the loop is free: a read is answered meanwhile
            names = (await tx.execute(text("SELECT name FROM leases"))).scalars().all()
        assert names == [] and not pending.done()
        other.release.set()
        done, _ = await asyncio.wait({pending}, timeout=20)
        assert done, "the write never got the lock after the other writer committed"
        await pending
    async with sqlite_db.read() as tx:
        names = (await tx.execute(text("SELECT name FROM leases ORDER BY name"))).scalars().all()
    assert names == ["other", "ours"]


async def test_a_lock_never_given_back_fails_with_sqlites_own_error(path_of: str) -> None:
    conn = InlineConnection(path_of, busy_timeout=0.05)
    try:
        with OtherProcessWriter(path_of):
            cursor = conn.cursor()
            with pytest.raises(sqlite3.OperationalError, match="database is locked"):
                await cursor.execute("BEGIN IMMEDIATE")
    finally:
        await conn.close()


async def test_commits_are_checkpointed_into_the_database_file_off_the_loop(
    sqlite_db: Database, path_of: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_inline, "CHECKPOINT_EVERY", 5)
    monkeypatch.setattr(sqlite_inline, "_checkpoints", sqlite_inline._Checkpoints())
    for n in range(5):
        async with sqlite_db.write() as tx:
            await tx.execute(
                text(
                    "INSERT INTO leases (name, owner, expires_at, acquired_at) "
                    "VALUES (:n, 'serve', '2030-01-01', '2026-01-01')"
                ),
                {"n": f"lease-{n}"},
            )

    def in_the_file() -> int:  # immutable: the database file alone, its WAL not read
        conn = sqlite3.connect(f"file:{path_of}?immutable=1", uri=True)
        try:
            return int(conn.execute("SELECT count(*) FROM leases").fetchone()[0])
        except sqlite3.DatabaseError:  # not even the schema is in the file yet, or the read
            return -1  # met a checkpoint copying pages in (immutable: no lock keeps it out)
        finally:
            conn.close()

    async def checkpointed() -> bool:
        return await asyncio.to_thread(in_the_file) == 5

    await wait_until(checkpointed, what="the five commits to be checkpointed into the file")


async def test_the_bots_claim_reads_only_the_waiting_inbox_items(sqlite_db: Database) -> None:
    from storage.repos.inbox import _FIRST_GATHERING, _READY

    async def plan_of(stmt: Any) -> list[str]:
        bound = stmt.params(
            skip=[1, 2], limit=10, quiet_since=None, waited_since=None, now=utcnow()
        )
        query = bound.compile(
            dialect=sqlite_db.engine.dialect, compile_kwargs={"literal_binds": True}
        )
        async with sqlite_db.read() as tx:
            return [row[-1] for row in await tx.execute(text(f"EXPLAIN QUERY PLAN {query}"))]

    # Which are ready: the waiting items walked in arrival order, so the walk stops at the
    # ready ones it needs; nothing sorted, every lookup through an index.
    ready = await plan_of(_READY)
    assert ready[0] == "SCAN inbox_items USING INDEX ix_inbox_items_waiting_order", ready
    assert not any("TEMP B-TREE" in step for step in ready), ready
    assert all("USING" in step for step in ready if step.startswith(("SCAN", "SEARCH"))), ready
    # When the next one will be: only the waiting items.
    gathering = await plan_of(_FIRST_GATHERING)
    assert any("ix_inbox_items_waiting " in step for step in gathering), gathering
