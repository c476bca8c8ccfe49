from __future__ import annotations

import asyncio
from datetime import timedelta

from sqlalchemy import select

from bot.host.notify import Notifier, create_notifier
from bot.host.workers import Host, Worker
from storage.db import Database, create_database
from storage.models import Timer
from storage.repos import leases
from storage.repos import timers as timer_repo
from storage.types import utcnow
from tests.waiting import wait_until


class SlowWorker(Worker):
    """Claims a timer, then works on it for `seconds` before finishing."""

    name = "slow"

    def __init__(self, db: Database, owner: str, seconds: float) -> None:
        self.db, self.owner, self.seconds = db, owner, seconds
        self.started = asyncio.Event()
        self.finished = False

    async def run_once(self) -> bool:
        async with self.db.write() as s:
            claimed = await timer_repo.claim_due(
                s, owner=self.owner, now=utcnow(), limit=1, lease=timedelta(minutes=5)
            )
        if not claimed:
            return False
        self.started.set()
        await asyncio.sleep(self.seconds)
        async with self.db.write() as s:
            await timer_repo.mark_fired(s, claimed[0].id, self.owner, utcnow())
        self.finished = True
        return True


async def _host_with_claimed_work(db: Database, seconds: float) -> tuple[Host, SlowWorker]:
    async with db.write() as s:
        await timer_repo.schedule(s, kind="job", key="job", due_at=utcnow(), payload={})
    host = Host(db, Notifier(), poll_interval=0.05)
    worker = SlowWorker(db, host.instance_id, seconds)
    host.add(worker)
    await host.start()

    async def started() -> bool:
        return worker.started.is_set()

    await wait_until(started, what="the worker to claim its job")
    return host, worker


class PacedWorker(Worker):
    """Always finds work, and after each run asks for an hour's pause."""

    name = "paced"
    topics = ("paced",)

    def __init__(self) -> None:
        self.runs = 0
        self.ran = asyncio.Event()

    async def run_once(self) -> bool:
        self.runs += 1
        self.ran.set()
        await asyncio.sleep(0)  # were the pause ignored, the loop would still turn
        return True

    def pause_after_work(self) -> float:
        return 3600.0


async def test_a_pause_after_work_holds_the_next_run_through_wake_ups_and_a_stop_ends_it(
    db: Database,
) -> None:
    notifier = Notifier()
    host = Host(db, notifier, instance_id="w1", poll_interval=0.01)
    worker = PacedWorker()
    host.add(worker)
    await host.start()
    async with asyncio.timeout(10):
        await worker.ran.wait()
    notifier.wake_local("paced")  # a wake-up is no reason to cut the pause short
    for _ in range(20):
        await asyncio.sleep(0)
    async with asyncio.timeout(10):  # well inside the grace: the stop ends the pause
        await host.stop(grace=60)
    assert worker.runs == 1


async def test_stop_lets_work_in_hand_finish_within_the_grace_period(db: Database) -> None:
    host, worker = await _host_with_claimed_work(db, seconds=0.3)
    await host.stop(grace=10)
    assert worker.finished
    async with db.read() as s:
        job = await s.scalar(select(Timer))
    assert job is not None and job.state == "fired"


async def test_stop_cancels_work_past_the_grace_period_and_releases_its_claim(
    db: Database,
) -> None:
    host, worker = await _host_with_claimed_work(db, seconds=60)
    async with db.write() as s:
        assert await leases.acquire(
            s, "conversation:1", host.instance_id, timedelta(minutes=1), utcnow()
        )
    await host.stop(grace=0.2)
    assert not worker.finished
    async with db.read() as s:
        job = await s.scalar(select(Timer))
        holder = await leases.holder(s, "conversation:1", utcnow())
    assert job is not None and job.state == "pending"
    assert job.lease_owner is None  # another replica may take it at once
    assert holder is None


async def test_readiness_reflects_a_dead_worker(db: Database) -> None:
    class Crashing(Worker):
        name = "crashing"

        async def run_once(self) -> bool:
            raise RuntimeError("boom")

    host = Host(db, Notifier(), poll_interval=0.05)
    host.add(Crashing())
    await host.start()
    state = host.status()["crashing"]

    async def failed() -> bool:
        return state.errors >= 1

    await wait_until(failed, what="the crashing worker's first error")
    # errors are contained: the loop keeps running, counts them and stays alive
    assert state.errors >= 1 and state.last_error == "RuntimeError: boom"
    assert host.healthy
    await host.stop(grace=1)
    assert not host.healthy


async def test_a_named_lease_has_one_holder_until_it_expires(db: Database) -> None:
    now = utcnow()
    async with db.write() as s:
        assert await leases.acquire(s, "bot:1", "a", timedelta(seconds=30), now)
        assert not await leases.acquire(s, "bot:1", "b", timedelta(seconds=30), now)
        assert await leases.acquire(s, "bot:1", "a", timedelta(seconds=30), now)  # renew
        later = now + timedelta(seconds=31)
        assert await leases.acquire(s, "bot:1", "b", timedelta(seconds=30), later)
        assert await leases.holder(s, "bot:1", later) == "b"


async def test_notification_wakes_a_subscriber_in_another_instance(database_url: str) -> None:
    dbs = [create_database(database_url) for _ in range(2)]
    notifiers = [create_notifier(d) for d in dbs]
    for n in notifiers:
        await n.start()
    try:
        sub = notifiers[1].subscribe(["inbox"])
        await notifiers[0].notify("inbox")
        if dbs[0].is_sqlite:
            # SQLite runs one process: instances do not hear each other; the poll covers it.
            assert not await sub.wait(0.2)
        else:
            assert await sub.wait(10), "LISTEN/NOTIFY did not deliver"
        local = notifiers[0].subscribe(["inbox"])
        await notifiers[0].notify("inbox")
        assert await local.wait(10)
    finally:
        for n in notifiers:
            await n.close()
        for d in dbs:
            await d.dispose()
