"""SQLite sessions without the asyncio bridge (storage/sqlite_sessions.py): the Database's
sessions run their statements at once, a result outlives its session, sessions open at once
each have a connection of their own, another process's lock at BEGIN is waited out until the
busy timeout and then fails with SQLite's own error, and a failed write leaves nothing
behind."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.util import greenlet_spawn

from storage.db import Database
from storage.models import Lease
from storage.sqlite_sessions import InlineSession, begin_write
from tests.storage.other_writer import OtherProcessWriter

LEASE_ROW = (
    "INSERT INTO leases (name, owner, expires_at, acquired_at) "
    "VALUES (:name, 'serve', '2030-01-01', '2026-01-01')"
)


async def test_reads_and_writes_run_without_a_greenlet(
    sqlite_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    spawned: list[object] = []

    async def counted(fn: object, *args: object, **kwargs: object) -> object:
        spawned.append(fn)
        return await greenlet_spawn(fn, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("sqlalchemy.ext.asyncio.session.greenlet_spawn", counted)
    async with sqlite_db.write() as tx:
        assert isinstance(tx, InlineSession)
        await tx.execute(text(LEASE_ROW), {"name": "a"})
        tx.add(Lease(name="b", owner="serve", expires_at=_at(2030), acquired_at=_at(2026)))
        await tx.flush()
    async with sqlite_db.read() as tx:
        names = list((await tx.scalars(select(Lease.name).order_by(Lease.name))).all())
        lease = await tx.get(Lease, "a")
    assert names == ["a", "b"] and lease is not None and lease.owner == "serve"
    assert spawned == []


async def test_a_result_read_after_its_session_ended_has_every_row(
    sqlite_db: Database,
) -> None:
    async with sqlite_db.write() as tx:
        for n in range(300):  # more than a cursor hands out in one fetch
            await tx.execute(text(LEASE_ROW), {"name": f"lease-{n:03d}"})
    async with sqlite_db.read() as tx:
        rows = await tx.execute(select(Lease.name).order_by(Lease.name))
        first = rows.fetchone()
    async with sqlite_db.write() as tx:  # another transaction on the same pool meanwhile
        await tx.execute(text(LEASE_ROW), {"name": "later"})
    rest = rows.all()
    assert first is not None and first[0] == "lease-000"
    assert [r[0] for r in rest] == [f"lease-{n:03d}" for n in range(1, 300)]


async def test_many_sessions_open_at_once_each_have_a_connection_and_none_waits(
    sqlite_db: Database,
) -> None:
    """Sessions span awaits (a turn's read, a delivery's): forty open at once, beside a
    write, each in a transaction of its own, and more than the pool keeps."""
    opened = asyncio.Event()
    count = 0

    async def reader() -> int:
        nonlocal count
        async with sqlite_db.read() as tx:
            await tx.execute(text("SELECT count(*) FROM leases"))  # its snapshot is taken
            count += 1
            if count == 40:
                opened.set()
            await opened.wait()
            return int(await tx.scalar(text("SELECT count(*) FROM leases")) or 0)

    readers = [asyncio.create_task(reader()) for _ in range(40)]
    async with asyncio.timeout(10):
        await opened.wait()
        async with sqlite_db.write() as tx:
            await tx.execute(text(LEASE_ROW), {"name": "meanwhile"})
        seen = await asyncio.gather(*readers)
    assert seen == [0] * 40  # each read its own snapshot, begun before the write


async def test_a_failed_write_is_rolled_back_whole(sqlite_db: Database) -> None:
    with pytest.raises(IntegrityError):
        async with sqlite_db.write() as tx:
            await tx.execute(text(LEASE_ROW), {"name": "a"})
            await tx.execute(text(LEASE_ROW), {"name": "a"})  # the same key again
    async with sqlite_db.read() as tx:
        assert (await tx.scalar(text("SELECT count(*) FROM leases"))) == 0
    async with sqlite_db.write() as tx:  # and the next write has the lock
        await tx.execute(text(LEASE_ROW), {"name": "a"})


async def test_a_lock_never_given_back_fails_with_sqlites_own_error_after_the_timeout(
    sqlite_db: Database,
) -> None:
    path = sqlite_db.engine.url.database
    assert path
    beats = 0

    async def beating() -> None:  # the loop keeps serving while the write waits
        nonlocal beats
        while True:
            await asyncio.sleep(0.005)
            beats += 1

    beat = asyncio.create_task(beating())
    try:
        with OtherProcessWriter(path):
            async with sqlite_db.sessions() as tx:
                assert isinstance(tx, InlineSession)
                with pytest.raises(OperationalError, match="database is locked"):
                    await begin_write(tx, {"maka_write": True}, busy_timeout=0.2)
    finally:
        beat.cancel()
    assert beats >= 5, "the loop stood still while the write waited"


def _at(year: int) -> datetime:
    return datetime(year, 1, 1, tzinfo=UTC)
