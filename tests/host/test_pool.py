"""A PoolWorker's units run side by side, at most `concurrency` at once, claimed by one loop
(one claim for every free slot); a unit that fails is counted and the pool goes on; stopping
lets units in hand finish within the grace period and cancels the rest."""

from __future__ import annotations

import asyncio
import logging

import pytest

from bot.host.backoff import log_failure
from bot.host.notify import Notifier
from bot.host.workers import Host, PoolWorker, Worker
from storage.db import Database
from tests.waiting import wait_until


class Units(PoolWorker[int]):
    """Hands out units 1..total; each waits for its release (or fails, if told to)."""

    name = "units"
    topics = ("units",)

    def __init__(self, total: int, concurrency: int, failing: frozenset[int] = frozenset()):
        self.total, self.concurrency, self.failing = total, concurrency, failing
        self.next = 1
        self.claims = 0
        self.asked: list[int] = []  # each claim's n: how many free slots it was asked to fill
        self.running: set[int] = set()
        self.done: list[int] = []
        self.cancelled: list[int] = []
        self.release: dict[int, asyncio.Event] = {}

    async def claim(self, n: int) -> list[int]:
        self.claims += 1
        self.asked.append(n)
        units = list(range(self.next, min(self.total + 1, self.next + n)))
        self.next += len(units)
        for unit in units:
            self.release[unit] = asyncio.Event()
        return units

    async def work(self, unit: int) -> None:
        self.running.add(unit)
        try:
            if unit in self.failing:
                raise RuntimeError(f"unit {unit} failed")
            await self.release[unit].wait()
            self.done.append(unit)
        except asyncio.CancelledError:
            self.cancelled.append(unit)
            raise
        finally:
            self.running.discard(unit)


def pool_host(db: Database, worker: Units) -> Host:
    host = Host(db, Notifier(), poll_interval=0.05)
    host.add(worker)
    return host


async def test_units_run_side_by_side_up_to_the_pools_size(db: Database) -> None:
    worker = Units(total=5, concurrency=3)
    host = pool_host(db, worker)
    await host.start()

    async def three_running() -> bool:
        return worker.running == {1, 2, 3}

    await wait_until(three_running, what="three units in hand at once")
    assert worker.next == 4  # the pool claims no fourth unit while three are in hand
    assert worker.asked == [3]  # one claim for the three free slots, not three claims
    worker.release[2].set()

    async def fourth_taken() -> bool:
        return worker.running == {1, 3, 4}

    await wait_until(fourth_taken, what="a freed slot to take the next unit")
    assert worker.asked == [3, 1]

    async def all_done() -> bool:
        for event in worker.release.values():  # unit 5 is claimed once a slot frees
            event.set()
        return sorted(worker.done) == [1, 2, 3, 4, 5]

    await wait_until(all_done, what="every unit done")
    assert len(host.status()["units"].tasks) == 1  # one claiming loop, not one per slot
    await host.stop(grace=1)


async def test_a_claim_short_of_its_free_slots_is_not_repeated_until_something_changes(
    db: Database,
) -> None:
    """Fewer units than slots means nothing more is ready: the pool waits for a wake-up, a
    freed slot or its idle timeout (a minute here) before it claims again, instead of asking
    at once for the slots still free."""
    worker = Units(total=2, concurrency=4)
    host = Host(db, Notifier(), poll_interval=60.0)
    host.add(worker)
    await host.start()

    async def both_running() -> bool:
        return worker.running == {1, 2}

    await wait_until(both_running, what="the two units there are in hand")
    worker.release[1].set()

    async def claimed_again() -> bool:
        return len(worker.asked) >= 2

    await wait_until(claimed_again, what="a claim once a slot freed")
    assert worker.asked == [4, 3]  # not [4, 2, ...]: no claim between the first and the freed slot
    worker.release[2].set()
    await host.stop(grace=1)


async def test_a_failing_unit_is_counted_and_the_pool_goes_on(db: Database) -> None:
    worker = Units(total=3, concurrency=2, failing=frozenset({1}))
    host = pool_host(db, worker)
    await host.start()
    state = host.status()["units"]

    async def went_on() -> bool:
        for event in worker.release.values():
            event.set()
        return sorted(worker.done) == [2, 3]

    await wait_until(went_on, what="the units after the failed one done")
    assert state.errors == 1 and state.last_error == "RuntimeError: unit 1 failed"
    assert host.healthy
    await host.stop(grace=1)


async def test_stop_lets_units_in_hand_finish_within_the_grace_and_cancels_the_rest(
    db: Database,
) -> None:
    worker = Units(total=2, concurrency=2)
    host = pool_host(db, worker)
    await host.start()

    async def both_running() -> bool:
        return worker.running == {1, 2}

    await wait_until(both_running, what="two units in hand")
    stopping = asyncio.create_task(host.stop(grace=0.5))
    worker.release[1].set()  # finishes within the grace; unit 2 never does
    await stopping
    assert worker.done == [1] and worker.cancelled == [2]
    assert not host.healthy


async def test_a_pool_whose_idle_wait_fails_keeps_its_size(db: Database) -> None:
    """The idle wait (which may read the database) fails once: counted, and the pool still
    runs at most its size of units (a slot given back twice would make it one bigger)."""

    class FlakyIdle(Units):
        idle_calls = 0

        async def idle_timeout(self, poll_interval: float) -> float:
            self.idle_calls += 1
            if self.idle_calls == 1:
                raise ConnectionError("the database went away")
            return poll_interval

    worker = FlakyIdle(total=0, concurrency=2)
    host = pool_host(db, worker)
    await host.start()
    state = host.status()["units"]

    async def failed_once_and_went_on() -> bool:
        return state.errors == 1 and worker.idle_calls >= 2

    await wait_until(failed_once_and_went_on, what="the pool to go on after its idle wait failed")
    worker.total = 4  # now there is work: only two units at once

    async def two_running() -> bool:
        return len(worker.running) == 2

    await wait_until(two_running, what="two units in hand")
    assert worker.next == 3 and len(worker.running) == 2

    async def all_done() -> bool:
        for event in worker.release.values():
            event.set()
        return sorted(worker.done) == [1, 2, 3, 4]

    await wait_until(all_done, what="every unit done")
    await host.stop(grace=1)


async def test_a_pool_whose_units_keep_failing_backs_off_before_each_claim(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A unit that raises (a worker that does not settle its own failures) does not make the
    pool claim again at once: each claim after a failure waits a backoff that grows with the
    failures in a row, and a unit done resets it. (Before, the failed unit's work was
    claimed again the moment its slot was free: a hot loop.)"""
    worker = Units(total=10_000, concurrency=1, failing=frozenset(range(1, 6)))
    host = pool_host(db, worker)
    backoffs: list[int] = []

    async def back_off(_worker: object, failures: int) -> None:
        backoffs.append(failures)  # counted, not waited: the test decides when time passes

    monkeypatch.setattr(host, "_back_off", back_off)
    await host.start()

    async def six_claims() -> bool:
        worker.release.get(6, asyncio.Event()).set()  # the sixth unit succeeds
        return worker.claims >= 7

    await wait_until(six_claims, what="the pool to claim past its failing units")
    await host.stop(grace=1)
    assert backoffs[:5] == [1, 2, 3, 4, 5]  # before each claim after a failure, growing
    assert len(backoffs) == 5  # none once a unit was done
    assert host.status()["units"].errors == 5


async def test_a_worker_that_always_fails_backs_off_and_logs_one_line_a_failure(
    db: Database, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The backstop under every loop worker (followers, sync, summaries, discovery, indexes):
    a run that raises waits a backoff growing with the failures in a row before the next,
    and the log has the traceback once, then one line a failure."""

    class AlwaysFails(Worker):
        name = "always-fails"
        calls = 0

        async def run_once(self) -> bool:
            self.calls += 1
            raise OverflowError("value out of int64 range")

    worker = AlwaysFails()
    host = Host(db, Notifier(), poll_interval=0.05)
    host.add(worker)
    backoffs: list[int] = []

    async def back_off(_worker: object, failures: int) -> None:
        backoffs.append(failures)  # counted, not waited
        await asyncio.sleep(0)

    monkeypatch.setattr(host, "_back_off", back_off)
    caplog.set_level(logging.WARNING, logger="bot.host.workers")
    await host.start()

    async def five_runs() -> bool:
        return worker.calls >= 5

    await wait_until(five_runs, what="five runs of the failing worker")
    await host.stop(grace=1)
    assert backoffs[:5] == [1, 2, 3, 4, 5]
    assert len(backoffs) >= worker.calls - 1  # no run without a backoff before it
    records = [r for r in caplog.records if r.name == "bot.host.workers"]
    assert len(records) == worker.calls
    assert [bool(r.exc_info) for r in records][:2] == [True, False]
    assert all("\n" not in r.getMessage() for r in records)


def test_a_failure_is_logged_as_one_line_that_says_where_it_was_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def parse(text: str) -> int:
        return int(text) // 0

    try:
        parse("99999999999999999999999")
    except ZeroDivisionError as exc:
        caplog.set_level(logging.DEBUG, logger="test.failures")
        log_failure(logging.getLogger("test.failures"), "unit 7 failed", exc)
    warning, debug = caplog.records
    assert warning.getMessage() == (
        "unit 7 failed: ZeroDivisionError: integer division or modulo by zero "
        f"(at tests/host/test_pool.py:{parse.__code__.co_firstlineno + 1} in parse)"
    )
    assert warning.exc_info is None and debug.levelno == logging.DEBUG and debug.exc_info
