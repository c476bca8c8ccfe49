"""Workers and the Host that runs them.

A worker is a loop of `run_once()`: claim a unit of work and finish it, or say there was none.
The Host owns the loop, so every worker gets the same lifecycle: prompt wake-ups, a poll as
backstop, crash isolation with backoff, and a drain on shutdown (stop claiming, let the unit
in hand finish within the grace period, cancel the rest, give every claim back).

A `PoolWorker` splits the two halves: one loop claims (`claim(n)`, as many units as there are
free slots, in one go), and up to `concurrency` units run side by side, each in a task of its
own (`work(unit)`). It is for work that mostly waits (a model call takes seconds and no CPU
here): dozens of units in flight cost one claiming loop, one wake-up wakes one loop, and a
unit that is not ready yet is simply not claimed, so waiting for it holds no slot. A unit
settles its own failure (backed off or parked on its row, `bot/host/backoff.py`); one that
raises anyway makes the pool claim no faster than the Host's backoff until a unit succeeds,
so no failure is retried in a hot loop.

While it runs, the Host renews its liveness lease (`storage.claims`): if the process is
killed, what it had claimed is free for the other replicas (or its restart) within
LIVENESS_TTL, whatever the claim's own lease.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Generic, TypeVar

from prometheus_client import Counter

from bot.host.backoff import backoff, error_line
from bot.host.notify import Notifier
from storage import claims
from storage.db import Database
from storage.models import (
    Action,
    Attachment,
    DiscoveryState,
    Matter,
    MemoryIndex,
    OutboxMessage,
    ProgressCard,
    SessionSummary,
    Source,
    Timer,
)
from storage.repos import leases
from storage.types import utcnow

log = logging.getLogger(__name__)

LIVENESS_TTL = timedelta(seconds=15)  # renewed every third of it
LIVENESS_RETRY = 0.5  # seconds between tries while the renewal fails
BACKOFF_START, MAX_BACKOFF = 0.2, 10.0  # seconds between tries of a worker that keeps failing
WORKER_ERRORS = Counter("maka_worker_errors_total", "Unhandled errors in worker steps", ["worker"])
# Every table whose rows are claimed with leases; the Host hands them back on shutdown.
CLAIMABLE_TABLES: tuple[type[claims.Claimable], ...] = (
    Action,
    Attachment,
    Timer,
    OutboxMessage,
    SessionSummary,
    Matter,
    Source,
    MemoryIndex,
    DiscoveryState,
    ProgressCard,
)


def new_instance_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


class Worker(ABC):
    name: str = "worker"
    topics: tuple[str, ...] = ()
    concurrency: int = 1

    @abstractmethod
    async def run_once(self) -> bool:
        """Do one unit of work; False when there was nothing to do."""

    async def idle_timeout(self, poll_interval: float) -> float:
        """How long to sleep when idle if no notification arrives."""
        return poll_interval

    def pause_after_work(self) -> float:
        """Seconds to wait after a run that did work, before the next: 0, go on at once.
        For work far cheaper in batches than row by row (a follower's index commit and
        checkpoint): under load what comes meanwhile gathers into the next batch."""
        return 0.0


U = TypeVar("U")


class PoolWorker(Worker, Generic[U]):
    @abstractmethod
    async def claim(self, n: int) -> list[U]:
        """Take up to `n` units that are ready now (their claims recorded); fewer only when
        no more is ready (the pool then waits for a wake-up, a freed slot or the idle
        timeout before it claims again). One claim for every free slot: under load a
        claim's transaction is shared by many units, not paid by each."""

    @abstractmethod
    async def work(self, unit: U) -> None:
        """Finish the unit and give its claim back, whatever happens."""

    async def run_once(self) -> bool:
        """One unit, claimed and worked inline (for a caller without a Host)."""
        units = await self.claim(1)
        for unit in units:
            await self.work(unit)
        return bool(units)


@dataclass
class WorkerState:
    worker: Worker
    tasks: list[asyncio.Task[None]] = field(default_factory=list)  # the worker's loops
    units: set[asyncio.Task[None]] = field(default_factory=set)  # a PoolWorker's units in hand
    freed: asyncio.Event = field(default_factory=asyncio.Event)  # a unit ended: claim again
    last_error: str | None = None
    errors: int = 0
    unit_failures: int = 0  # a PoolWorker's units that failed in a row (its claims back off)

    def count_error(self, exc: BaseException) -> None:
        """Counted, and logged in one line; the traceback only when the error is new (the
        same failure again, after a backoff, adds a line, not a page)."""
        error = error_line(exc)
        repeated = error == self.last_error
        self.errors += 1
        self.last_error = error
        WORKER_ERRORS.labels(self.worker.name).inc()
        log.warning(
            "worker %s failed (%d so far): %s",
            self.worker.name,
            self.errors,
            error,
            exc_info=None if repeated else exc,
        )

    @property
    def alive(self) -> bool:
        return bool(self.tasks) and not any(t.done() for t in self.tasks)


class Host:
    def __init__(
        self,
        db: Database,
        notifier: Notifier,
        *,
        instance_id: str | None = None,
        poll_interval: float = 1.0,
    ) -> None:
        self.db = db
        self.notifier = notifier
        self.instance_id = instance_id or new_instance_id()
        self.poll_interval = poll_interval
        self._workers: dict[str, WorkerState] = {}
        self._stopping = asyncio.Event()
        self._started = False
        self._liveness: asyncio.Task[None] | None = None

    def add(self, worker: Worker) -> None:
        if worker.name in self._workers:
            raise ValueError(f"worker {worker.name!r} already added")
        self._workers[worker.name] = WorkerState(worker)
        if self._started:
            self._spawn(self._workers[worker.name])

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def status(self) -> dict[str, WorkerState]:
        return dict(self._workers)

    @property
    def healthy(self) -> bool:
        return self._started and not self.stopping and all(s.alive for s in self._workers.values())

    async def start(self) -> None:
        self._started = True
        self._liveness = asyncio.create_task(self._keep_alive(), name="host-liveness")
        for state in self._workers.values():
            self._spawn(state)

    async def _keep_alive(self) -> None:
        name = claims.host_lease_name(self.instance_id)
        while not self.stopping:
            pause = LIVENESS_TTL.total_seconds() / 3
            try:
                async with self.db.write() as tx:
                    await leases.acquire(tx, name, self.instance_id, LIVENESS_TTL, utcnow())
            except Exception as exc:  # the database is away: try again soon
                log.warning("host %s: liveness not renewed: %s", self.instance_id, exc)
                # An outage longer than LIVENESS_TTL lapses every replica's liveness at once:
                # when the database is back, the one that renews first sees the others gone
                # and may take over work they still have in hand. Renewing within a moment of
                # its return keeps that window short (it was up to a whole beat).
                pause = LIVENESS_RETRY
            await self._sleep(pause)

    def _spawn(self, state: WorkerState) -> None:
        if isinstance(state.worker, PoolWorker):
            task = asyncio.create_task(self._pool_loop(state), name=f"{state.worker.name}#pool")
            state.tasks.append(task)
            return
        for n in range(state.worker.concurrency):
            task = asyncio.create_task(self._loop(state), name=f"{state.worker.name}#{n}")
            state.tasks.append(task)

    async def _loop(self, state: WorkerState) -> None:
        worker = state.worker
        failures = 0
        while not self.stopping:
            with self.notifier.subscribe(worker.topics) as sub:
                try:
                    did_work = await worker.run_once()
                    failures = 0
                    if did_work and (pause := worker.pause_after_work()) > 0:
                        await self._sleep(pause)  # a stop ends it
                    elif not did_work and not self.stopping:
                        # inside the try: an idle_timeout that reads the database can fail too
                        await sub.wait(await worker.idle_timeout(self.poll_interval))
                except Exception as exc:
                    failures += 1
                    state.count_error(exc)
                    await self._back_off(worker, failures)

    async def _pool_loop(self, state: WorkerState) -> None:
        worker = state.worker
        assert isinstance(worker, PoolWorker)
        slots = asyncio.Semaphore(worker.concurrency)
        failures = 0
        while await self._free_slot(slots):
            held = 1
            while not slots.locked():  # every free slot, taken without waiting
                await slots.acquire()
                held += 1
            state.freed.clear()
            if state.unit_failures:  # its units keep failing: claim no faster than the backoff
                await self._back_off(worker, state.unit_failures)
                if self.stopping:
                    _release(slots, held)
                    break
            with self.notifier.subscribe(worker.topics) as sub:
                try:
                    units = await worker.claim(held)
                except Exception as exc:
                    _release(slots, held)
                    failures += 1
                    state.count_error(exc)
                    await self._back_off(worker, failures)
                    continue
                failures = 0
                _release(slots, held - len(units))
                for unit in units:
                    task = asyncio.create_task(
                        self._work(state, worker, unit, slots), name=f"{worker.name}#unit"
                    )
                    state.units.add(task)
                    task.add_done_callback(state.units.discard)
                if len(units) < held and not self.stopping:  # nothing more is ready now
                    await _first_of(sub.wait(await self._idle(state)), state.freed.wait())

    async def _idle(self, state: WorkerState) -> float:
        try:
            return await state.worker.idle_timeout(self.poll_interval)
        except Exception as exc:  # it may read the database: counted, and the poll stands
            state.count_error(exc)
            return self.poll_interval

    async def _work(
        self, state: WorkerState, worker: PoolWorker[U], unit: U, slots: asyncio.Semaphore
    ) -> None:
        try:
            await worker.work(unit)
            state.unit_failures = 0
        except Exception as exc:  # a unit should settle its own failure; this one did not
            state.unit_failures += 1
            state.count_error(exc)
        finally:
            slots.release()
            state.freed.set()

    async def _free_slot(self, slots: asyncio.Semaphore) -> bool:
        """Wait for a free slot; False once the Host is stopping (then no slot is held)."""
        if self.stopping:
            return False
        if not slots.locked():
            await slots.acquire()
            return True
        acquire = asyncio.ensure_future(slots.acquire())
        await _first_of(acquire, self._stopping.wait())
        if self.stopping:
            if acquire.done() and not acquire.cancelled():
                slots.release()
            else:
                acquire.cancel()
            return False
        return True

    async def _back_off(self, worker: Worker, failures: int) -> None:
        """Wait longer after each failure in a row. A short pause always (a worker failing on
        every input must not spin); past it, a wake-up of the worker's topics ends the wait:
        someone committed, so the database is back (after an outage the backoff has grown,
        and waiting it out would delay every answer)."""
        delay = backoff(failures + 1, first=BACKOFF_START, most=MAX_BACKOFF)
        floor = min(delay, 1.0)
        await self._sleep(floor)
        if self.stopping:
            return
        with self.notifier.subscribe(worker.topics) as fresh:
            await fresh.wait(delay - floor)

    async def _sleep(self, seconds: float) -> None:
        try:
            async with asyncio.timeout(seconds):
                await self._stopping.wait()
        except TimeoutError:
            pass

    async def stop(self, grace: float = 20.0) -> None:
        """Stop claiming; let work in hand finish within `grace` seconds; release the rest."""
        self._stopping.set()
        self.notifier.wake_all()
        deadline = time.monotonic() + grace
        loops = [t for s in self._workers.values() for t in s.tasks]
        if loops:  # a pool's loop stops claiming at once; its units are awaited below
            await asyncio.wait(loops, timeout=grace)
        tasks = loops + [t for s in self._workers.values() for t in s.units]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=max(0.0, deadline - time.monotonic()))
            for task in pending:
                log.warning("cancelling %s after the %.0fs grace period", task.get_name(), grace)
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=max(1.0, deadline - time.monotonic()))
        if self._liveness is not None:
            await self._liveness  # it ends at the stop signal: released with the claims below
        await self.release_claims()

    async def release_claims(self) -> None:
        async with self.db.write() as tx:
            released = await leases.release_all(tx, self.instance_id)
            for table in CLAIMABLE_TABLES:
                released += await claims.release_rows(tx, table, self.instance_id)
        if released:
            log.info("released %d claims held by %s", released, self.instance_id)


def _release(slots: asyncio.Semaphore, count: int) -> None:
    for _ in range(count):
        slots.release()


async def _first_of(*waits: Awaitable[object]) -> None:
    """Return when the first of `waits` is done; the others are cancelled."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()
