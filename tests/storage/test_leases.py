"""Named leases: a live holder keeps its lease whatever else is in the table, and the
set-based forms (many names in one statement, as a group of Bot turns takes, checks and
gives back its conversations) say the same as one name at a time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from storage.claims import host_lease_name
from storage.db import Database
from storage.repos import leases

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
TTL = timedelta(seconds=15)
LIVENESS = timedelta(minutes=1)


async def _hosts(db: Database, *, alive: list[str], gone: list[str]) -> None:
    """Liveness leases: those `alive` beat just now, those `gone` stopped long ago."""
    async with db.write() as tx:
        for host in alive:
            assert await leases.acquire(tx, host_lease_name(host), host, LIVENESS, NOW)
        for host in gone:
            long_ago = NOW - timedelta(minutes=5)
            assert await leases.acquire(tx, host_lease_name(host), host, LIVENESS, long_ago)


async def test_a_live_holder_keeps_its_lease_while_another_host_is_gone(db: Database) -> None:
    """A dead Host's own liveness row stays behind: that must free only its own leases. (The
    upsert's check once scanned every lease, so any dead Host freed all of them.)"""
    await _hosts(db, alive=["a", "b"], gone=["dead"])
    async with db.write() as tx:
        assert await leases.acquire(tx, "bot:conversation:1", "a", TTL, NOW)
        assert await leases.acquire(tx, "bot:conversation:2", "dead", TTL, NOW)
    async with db.write() as tx:
        assert not await leases.acquire(tx, "bot:conversation:1", "b", TTL, NOW)
        assert await leases.acquire_all(tx, ["bot:conversation:1"], "b", TTL, NOW) == set()
        taken = await leases.acquire_all(
            tx, ["bot:conversation:1", "bot:conversation:2"], "b", TTL, NOW
        )
    assert taken == {"bot:conversation:2"}, "only the dead Host's lease is free"
    async with db.read() as tx:
        assert await leases.holder(tx, "bot:conversation:1", NOW) == "a"
        assert await leases.holder(tx, "bot:conversation:2", NOW) == "b"


async def test_many_leases_are_taken_renewed_and_given_back_in_one_statement_each(
    db: Database,
) -> None:
    await _hosts(db, alive=["a", "b"], gone=[])
    async with db.write() as tx:
        assert await leases.acquire_all(tx, ["x", "y"], "a", TTL, NOW) == {"x", "y"}
        assert await leases.acquire_all(tx, ["y", "z"], "b", TTL, NOW) == {"z"}
        assert await leases.acquire_all(tx, ["x"], "a", TTL, NOW) == {"x"}, "its own, again"
    later = NOW + TTL + timedelta(seconds=1)
    async with db.write() as tx:  # x lapsed: b takes it; a's renewal then finds only y
        assert await leases.acquire_all(tx, ["x"], "b", TTL, later) == {"x"}
        assert await leases.renew_all(tx, ["x", "y", "z"], "a", TTL, later) == {"y"}
        assert await leases.release_each(tx, ["x", "y"], "a") == {"y"}
        assert await leases.release_each(tx, [], "a") == set()
    async with db.read() as tx:
        assert await leases.holder(tx, "x", later) == "b"
        assert await leases.holder(tx, "y", later) is None
        assert await leases.holder(tx, "z", later) is None, "b's z lapsed: no renewal of a's"
