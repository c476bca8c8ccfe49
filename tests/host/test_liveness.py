"""A killed process's work is taken over once its Host's liveness lease lapses, not when each
claim's own (longer) lease would expire; a live Host keeps what it holds; an owner that is no
Host keeps its claims until they expire (time is the `now` handed to the repositories). A
worker that failed, even in its idle wait, goes on, and a wake-up ends its backoff."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import cast

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.host import workers as workers_module
from bot.host.notify import Notifier
from bot.host.workers import LIVENESS_TTL, Host, Worker
from storage.claims import host_lease_name
from storage.db import Database
from storage.models import Lease
from storage.repos import leases
from storage.repos import timers as timer_repo
from storage.types import utcnow
from tests.waiting import wait_until

LONG = timedelta(minutes=5)  # a claim's own lease, sized for the longest unit of work


async def _claim_a_job(db: Database, owner: str) -> int:
    async with db.write() as s:
        await timer_repo.schedule(s, kind="job", key="job", due_at=utcnow(), payload={})
        [job] = await timer_repo.claim_due(s, owner=owner, now=utcnow(), limit=1, lease=LONG)
        return job.id


async def _beat(db: Database, instance_id: str, at: datetime) -> None:
    async with db.write() as s:
        name = host_lease_name(instance_id)
        assert await leases.acquire(s, name, instance_id, LIVENESS_TTL, at)


async def test_a_claim_of_a_host_that_stopped_beating_is_taken_over_long_before_it_expires(
    db: Database,
) -> None:
    now = utcnow()
    await _beat(db, "killed", now)
    job_id = await _claim_a_job(db, "killed")
    alive_still = now + LIVENESS_TTL / 2
    gone = now + LIVENESS_TTL + timedelta(seconds=1)  # long before the claim's 5 minutes
    async with db.write() as s:
        assert await timer_repo.claim_due(s, owner="b", now=alive_still, limit=1, lease=LONG) == []
        [taken] = await timer_repo.claim_due(s, owner="b", now=gone, limit=1, lease=LONG)
    assert taken.id == job_id and taken.lease_owner == "b"


async def test_a_host_that_keeps_beating_keeps_its_claim(db: Database) -> None:
    now = utcnow()
    await _beat(db, "alive", now)
    await _claim_a_job(db, "alive")
    later = now + LIVENESS_TTL + timedelta(seconds=1)
    await _beat(db, "alive", later - timedelta(seconds=2))  # renewed in time
    async with db.write() as s:
        assert await timer_repo.claim_due(s, owner="b", now=later, limit=1, lease=LONG) == []


async def test_an_owner_that_is_no_host_keeps_its_claim_until_it_expires(db: Database) -> None:
    await _claim_a_job(db, "a-tool")
    later = utcnow() + LIVENESS_TTL * 4
    async with db.write() as s:
        assert await timer_repo.claim_due(s, owner="b", now=later, limit=1, lease=LONG) == []
        expired = utcnow() + LONG + timedelta(seconds=1)
        assert len(await timer_repo.claim_due(s, owner="b", now=expired, limit=1, lease=LONG)) == 1


async def test_a_named_lease_of_a_host_that_is_gone_is_free(db: Database) -> None:
    now = utcnow()
    await _beat(db, "killed", now)
    async with db.write() as s:
        assert await leases.acquire(s, "sources.index", "killed", LONG, now)
        assert not await leases.acquire(s, "sources.index", "b", LONG, now + LIVENESS_TTL / 2)
        gone = now + LIVENESS_TTL + timedelta(seconds=1)
        assert await leases.holder(s, "sources.index", gone) is None
        assert await leases.acquire(s, "sources.index", "b", LONG, gone)
        assert await leases.holder(s, "sources.index", gone) == "b"


async def test_a_running_host_beats_and_a_stopped_one_leaves_no_liveness_behind(
    db: Database,
) -> None:
    host = Host(db, Notifier(), poll_interval=0.05)
    await host.start()
    name = host_lease_name(host.instance_id)

    async def beating() -> bool:
        async with db.read() as s:
            return await leases.holder(s, name, utcnow()) == host.instance_id

    await wait_until(beating, what="the host's first liveness beat")
    await host.stop(grace=1)
    async with db.read() as s:
        assert await s.scalar(select(Lease).where(Lease.name == name)) is None


async def test_a_worker_whose_idle_wait_fails_keeps_running(db: Database) -> None:
    """Its idle_timeout reads the database, which is away for a moment: the error is counted
    and the worker goes on (it used to end the worker's task for good)."""

    class FlakyIdle(Worker):
        name = "flaky-idle"
        calls = 0

        async def run_once(self) -> bool:
            return False

        async def idle_timeout(self, poll_interval: float) -> float:
            self.calls += 1
            if self.calls == 1:
                raise ConnectionError("the database went away")
            return poll_interval

    worker = FlakyIdle()
    host = Host(db, Notifier(), poll_interval=0.05)
    host.add(worker)
    await host.start()
    state = host.status()[worker.name]

    async def went_on() -> bool:
        return worker.calls >= 3

    await wait_until(went_on, what="the worker to go on after its idle wait failed")
    assert state.errors == 1 and state.last_error == "ConnectionError: the database went away"
    assert host.healthy
    await host.stop(grace=1)


async def test_a_wake_up_ends_the_backoff_of_a_worker_that_failed(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After an outage the backoff has grown; the first commit's wake-up (the database is
    back) ends it, past a short pause, instead of the worker waiting it out."""
    monkeypatch.setattr(workers_module, "BACKOFF_START", 1800.0)
    monkeypatch.setattr(workers_module, "MAX_BACKOFF", 3600.0)  # an hour, unless woken

    class FailsOnce(Worker):
        name = "fails-once"
        topics = ("fails-once",)
        calls = 0

        async def run_once(self) -> bool:
            self.calls += 1
            if self.calls == 1:
                raise ConnectionError("the database went away")
            return False

    worker = FailsOnce()
    notifier = Notifier()
    host = Host(db, notifier, poll_interval=0.05)
    host.add(worker)
    await host.start()
    state = host.status()[worker.name]

    async def failed() -> bool:
        return state.errors == 1

    async def tried_again() -> bool:
        await notifier.notify("fails-once")  # as a writer does after its commit
        return worker.calls >= 2

    await wait_until(failed, what="the worker's failure")
    await wait_until(tried_again, what="the wake-up to end the hour-long backoff")
    await host.stop(grace=1)


async def test_a_liveness_renewal_that_failed_is_tried_again_within_a_moment(
    db: Database,
) -> None:
    """After an outage every replica's liveness has lapsed; the first to renew sees the others
    gone. So a failed renewal is retried after LIVENESS_RETRY, not a whole beat later."""

    class AwayOnce:
        def __init__(self) -> None:
            self.tries = 0

        @asynccontextmanager
        async def write(self) -> AsyncIterator[AsyncSession]:
            self.tries += 1
            if self.tries == 1:
                raise ConnectionRefusedError("the database is away")
            async with db.write() as tx:
                yield tx

    host = Host(cast(Database, AwayOnce()), Notifier(), instance_id="cut-off")
    pauses: list[float] = []

    async def pause(seconds: float) -> None:
        pauses.append(seconds)
        if len(pauses) == 2:
            host._stopping.set()

    host._sleep = pause  # type: ignore[method-assign]
    await host._keep_alive()
    assert pauses == [workers_module.LIVENESS_RETRY, LIVENESS_TTL.total_seconds() / 3]
    async with db.read() as s:
        assert await leases.holder(s, host_lease_name("cut-off"), utcnow()) == "cut-off"
