from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import timedelta

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.host.notify import Notifier, create_notifier
from bot.host.timers import Timers, TimerWorker
from bot.host.workers import Host
from storage.db import Database, create_database
from storage.models import Timer
from storage.repos import timers as timer_repo
from storage.types import utcnow
from tests.waiting import wait_until


class Fired:
    """Records every firing, across hosts, to prove each timer fired exactly once."""

    def __init__(self) -> None:
        self.keys: list[str] = []

    async def __call__(self, _tx: AsyncSession, timer: Timer) -> None:
        await asyncio.sleep(0)  # let other claimers interleave
        self.keys.append(timer.key)


def timer_host(db: Database, notifier: Notifier, fired: Fired, concurrency: int = 1) -> Host:
    host = Host(db, notifier, poll_interval=0.05)
    timers = Timers(db, notifier)
    timers.on("test", fired)
    worker = TimerWorker(timers, host.instance_id)
    worker.concurrency = concurrency
    host.add(worker)
    return host


def found_nothing_due(host: Host) -> Callable[[], Awaitable[bool]]:
    """A condition that holds once the host's timer worker has looked for due timers and
    found none (had one been due, it would have fired it first)."""
    worker = host.status()[TimerWorker.name].worker
    run_once = worker.run_once
    idle = 0

    async def counting() -> bool:
        nonlocal idle
        did_work = await run_once()
        idle += not did_work
        return did_work

    worker.run_once = counting  # type: ignore[method-assign]

    async def looked() -> bool:
        return idle > 0

    return looked


async def count_fired(db: Database) -> int:
    async with db.read() as s:
        return int(await s.scalar(select(func.count()).where(Timer.state == "fired")) or 0)


async def test_two_hosts_fire_every_due_timer_exactly_once_under_contention(
    database_url: str,
) -> None:
    n = 200
    seed = create_database(database_url)
    async with seed.write() as s:
        for i in range(n):
            await timer_repo.schedule(
                s, kind="test", key=f"t{i}", due_at=utcnow() - timedelta(seconds=1), payload={}
            )
    await seed.dispose()

    fired = Fired()
    dbs = [create_database(database_url) for _ in range(2)]
    notifiers = [create_notifier(d) for d in dbs]
    hosts = [timer_host(d, nt, fired, concurrency=4) for d, nt in zip(dbs, notifiers, strict=True)]
    for nt in notifiers:
        await nt.start()
    for h in hosts:
        await h.start()
    try:
        await wait_until(lambda: _all_fired(dbs[0], n))
    finally:
        for h in hosts:
            await h.stop(grace=5)
        for nt in notifiers:
            await nt.close()
        for d in dbs:
            await d.dispose()

    counts = Counter(fired.keys)
    assert len(counts) == n
    assert max(counts.values()) == 1, [k for k, c in counts.items() if c > 1]


async def _all_fired(db: Database, n: int) -> bool:
    return await count_fired(db) == n


async def test_timer_due_while_down_fires_once_after_restart(db: Database) -> None:
    notifier = Notifier()
    fired = Fired()
    first = timer_host(db, notifier, fired)
    await first.start()
    await Timers(db, notifier).schedule(
        kind="test", key="wake", due_at=utcnow() + timedelta(hours=1)
    )
    await first.stop(grace=5)  # the process goes down before the wake is due
    # The wake falls due while it is down: the test moves it into the past instead of
    # sleeping through it (and racing the clock).
    async with db.write() as s:
        timer = await timer_repo.get(s, "wake")
        assert timer is not None
        timer.due_at = utcnow() - timedelta(seconds=1)
    assert fired.keys == []

    second = timer_host(db, notifier, fired)
    await second.start()
    await wait_until(lambda: _all_fired(db, 1))
    await second.stop(grace=5)

    third = timer_host(db, notifier, fired)  # a later restart must not fire it again
    looked = found_nothing_due(third)
    await third.start()
    await wait_until(looked, what="the restarted host to look for due timers")
    await third.stop(grace=5)
    assert fired.keys == ["wake"]


async def test_claim_of_a_crashed_host_lapses_and_the_timer_fires_once(db: Database) -> None:
    async with db.write() as s:
        await timer_repo.schedule(
            s, kind="test", key="orphan", due_at=utcnow() - timedelta(seconds=1), payload={}
        )
        # a host claims it and dies without firing or releasing
        claimed = await timer_repo.claim_due(
            s, owner="dead-host", now=utcnow(), limit=10, lease=timedelta(milliseconds=200)
        )
    assert [t.key for t in claimed] == ["orphan"]

    fired = Fired()
    host = timer_host(db, Notifier(), fired)
    await host.start()
    await wait_until(lambda: _all_fired(db, 1))
    await host.stop(grace=5)
    assert fired.keys == ["orphan"]


async def test_failing_handler_is_retried_and_effects_roll_back(db: Database) -> None:
    calls: list[str] = []

    async def flaky(tx: AsyncSession, timer: Timer) -> None:
        calls.append(timer.key)
        await timer_repo.schedule(  # an effect inside the firing transaction
            tx, kind="other", key=f"effect-{len(calls)}", due_at=utcnow(), payload={}
        )
        if len(calls) == 1:
            raise RuntimeError("transient")

    notifier = Notifier()
    host = Host(db, notifier, poll_interval=0.05)
    timers = Timers(db, notifier)
    timers.on("test", flaky)
    timers.on("other", Fired())
    worker = TimerWorker(timers, host.instance_id)
    host.add(worker)
    await timers.schedule(kind="test", key="flaky", due_at=utcnow())
    # retry quickly: pull the backoff in
    await host.start()
    await wait_until(lambda: _has_failure(db, "flaky"))
    async with db.write() as s:
        timer = await timer_repo.get(s, "flaky")
        assert timer is not None
        timer.due_at = utcnow()
    await notifier.notify("timers")
    await wait_until(lambda: _state_is(db, "flaky", "fired"))
    await host.stop(grace=5)

    async with db.read() as s:
        assert await timer_repo.get(s, "effect-1") is None  # rolled back with the failure
        assert await timer_repo.get(s, "effect-2") is not None
        flaky_timer = await timer_repo.get(s, "flaky")
    assert flaky_timer is not None and flaky_timer.attempts == 1
    assert calls == ["flaky", "flaky"]


async def _has_failure(db: Database, key: str) -> bool:
    async with db.read() as s:
        timer = await timer_repo.get(s, key)
    return timer is not None and timer.attempts > 0


async def _state_is(db: Database, key: str, state: str) -> bool:
    async with db.read() as s:
        timer = await timer_repo.get(s, key)
    return timer is not None and timer.state == state


async def test_rescheduling_a_key_moves_its_wake_instead_of_adding_one(db: Database) -> None:
    timers = Timers(db, Notifier())
    await timers.schedule(kind="test", key="k", due_at=utcnow() + timedelta(hours=1))
    later = utcnow() + timedelta(hours=2)
    await timers.schedule(kind="test", key="k", due_at=later)
    async with db.read() as s:
        rows = (await s.scalars(select(Timer))).all()
    assert len(rows) == 1
    assert abs((rows[0].due_at - later).total_seconds()) < 0.001
