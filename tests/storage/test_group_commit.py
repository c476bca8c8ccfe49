"""Grouped writes (`Database.grouped`): writes queued together share one transaction, each
caller gets its own result once committed, and one failing write fails only its caller."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from storage.db import Database, Together
from storage.group_commit import GroupCommit
from storage.repos import admins
from storage.types import utcnow

Op = Callable[[AsyncSession], Awaitable[bool]]


def counted(db: Database) -> tuple[GroupCommit[Op, bool], list[int]]:
    """A GroupCommit of operations, each group in one `db.write()`, its transactions counted."""
    transactions: list[int] = []

    async def commit(operations: list[Op]) -> list[bool]:
        transactions.append(1)
        async with db.write() as tx:
            return [await operation(tx) for operation in operations]

    return GroupCommit(commit, what="test writes"), transactions


def add(open_id: str) -> Callable[[AsyncSession], Awaitable[bool]]:
    return lambda tx: admins.add(tx, open_id, "ou_owner", utcnow())


async def test_writes_queued_together_share_one_transaction_and_each_gets_its_result(
    db: Database,
) -> None:
    group, transactions = counted(db)
    results = await asyncio.gather(*(group.run(add(f"ou_{n}")) for n in range(10)))
    again = await group.run(add("ou_3"))  # already there: its own answer, not the others'

    assert results == [True] * 10 and again is False
    assert transactions == [1, 1]  # the ten in one transaction, the eleventh alone
    async with db.read() as tx:
        assert len(await admins.all_ids(tx)) == 10


async def test_a_failing_write_fails_only_its_caller(db: Database) -> None:
    group, transactions = counted(db)

    async def broken(tx: AsyncSession) -> bool:
        await tx.execute(text("SELECT no_such_column FROM admins"))
        return True

    outcomes = await asyncio.gather(
        group.run(add("ou_a")), group.run(broken), group.run(add("ou_b")), return_exceptions=True
    )

    assert outcomes[0] is True and outcomes[2] is True
    assert isinstance(outcomes[1], Exception) and "no_such_column" in str(outcomes[1])
    assert len(transactions) == 4  # the group, then each of its three alone
    async with db.read() as tx:
        assert sorted(await admins.all_ids(tx)) == ["ou_a", "ou_b"]


async def test_a_lone_write_is_committed_when_its_caller_hears_back(db: Database) -> None:
    assert await db.grouped(add("ou_lone")) is True
    async with db.read() as tx:
        assert await admins.exists(tx, "ou_lone")


async def test_a_caller_that_goes_away_leaves_its_write_to_be_committed(db: Database) -> None:
    caller = asyncio.create_task(db.grouped(add("ou_gone")))
    await asyncio.sleep(0)  # queued
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    await db.dispose()  # waits for the writer, as a shutdown does
    async with db.read() as tx:
        assert await admins.exists(tx, "ou_gone")


async def _add_each(tx: AsyncSession, open_ids: list[str]) -> list[bool]:
    """A `Together` kind: every caller's admin in one call (its calls recorded)."""
    KIND_CALLS.append(list(open_ids))
    return [await admins.add(tx, open_id, "ou_owner", utcnow()) for open_id in open_ids]


KIND_CALLS: list[list[str]] = []


async def test_parts_of_one_kind_are_written_in_one_call_at_the_first_ones_place(
    db: Database,
) -> None:
    """`Together` parts queued with plain writes: the kind runs once for all of its parts,
    where its first part stood, and each caller gets its own part's result."""
    KIND_CALLS.clear()
    order: list[str] = []

    def plain(name: str) -> Callable[[AsyncSession], Awaitable[str]]:
        async def write(_tx: AsyncSession) -> str:
            order.append(name if KIND_CALLS else f"{name} before the kind")
            return name

        return write

    results = await asyncio.gather(
        db.grouped(plain("first")),
        db.grouped(Together(_add_each, "ou_a")),
        db.grouped(plain("between")),
        db.grouped(Together(_add_each, "ou_b")),
        db.grouped(Together(_add_each, "ou_a")),  # its own answer: written by the first
    )

    assert results == ["first", True, "between", True, False]
    assert KIND_CALLS == [["ou_a", "ou_b", "ou_a"]]
    assert order == ["first before the kind", "between"]


async def test_a_kind_that_fails_in_a_group_is_written_again_for_each_part_alone(
    db: Database,
) -> None:
    KIND_CALLS.clear()

    async def broken(tx: AsyncSession) -> bool:
        await tx.execute(text("SELECT no_such_column FROM admins"))
        return True

    outcomes = await asyncio.gather(
        db.grouped(Together(_add_each, "ou_a")),
        db.grouped(broken),
        db.grouped(Together(_add_each, "ou_b")),
        return_exceptions=True,
    )

    assert outcomes[0] is True and outcomes[2] is True
    assert isinstance(outcomes[1], Exception)
    assert KIND_CALLS == [["ou_a", "ou_b"], ["ou_a"], ["ou_b"]], "the group, then each alone"
    async with db.read() as tx:
        assert sorted(await admins.all_ids(tx)) == ["ou_a", "ou_b"]
