"""PostgreSQL stopped and started again under steady traffic (the suite's private cluster).

While the database is down the webhook must not say 2xx (nothing can be stored) nor 4xx
(Feishu would never deliver the event again): 5xx, or no answer, so Feishu delivers again.
Once it is back, every input is answered exactly once, each within ANSWERED_WITHIN of the
database's return (or of its own delivery, if later), and both replicas are ready again.

(This found a bug, now fixed: the Host ran a worker's `idle_timeout()` outside the loop's error
handling, the timer worker's reads the database, and when that read met a connection the
restart broke, the worker's task ended for good and `/readyz` answered 503 until restarted.)
"""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.faults.harness import FaultWorld, wait_for

pytestmark = pytest.mark.faults

RATE = 10.0
SECONDS = 12.0
OUTAGE_ANSWERS = 10  # webhook answers seen while the database is down
# A restart or fail-over takes a while: longer than a Host's liveness lease (15 s), so every
# replica's claims look abandoned when the database returns.
OUTAGE_SECONDS = 20.0
BACK_WITHIN = 30.0  # seconds from the database's return to the first input stored again
READY_WITHIN = 30.0
ANSWERED_WITHIN = 10.0  # issue 16: every input answered within 10 s of the database's return


async def test_postgres_restart_under_traffic(world: FaultWorld) -> None:
    async with world.traffic("pg") as traffic:
        sending = asyncio.create_task(traffic.run(RATE, SECONDS))

        async def partway() -> bool:
            return len(traffic.inputs) >= RATE * SECONDS * 0.3

        await wait_for(partway, timeout=SECONDS, what="a third of the traffic sent")
        await world.cluster.stop("fast")
        down_at = time.monotonic()

        async def outage_seen() -> bool:
            return len(traffic.attempts_since(down_at)) >= OUTAGE_ANSWERS

        await wait_for(outage_seen, timeout=30, what=f"{OUTAGE_ANSWERS} webhook answers")
        await asyncio.sleep(max(0.0, down_at + OUTAGE_SECONDS - time.monotonic()))
        during = traffic.attempts_since(down_at)
        await world.cluster.start()
        up_at = time.monotonic()

        async def stored_again() -> bool:
            return any(a.ok for a in traffic.attempts_since(up_at))

        back_in = await wait_for(
            stored_again, timeout=BACK_WITHIN, what="a webhook 2xx after the database returned"
        )
        await sending
        verdict = await world.settle(traffic)
        quiet_in = time.monotonic() - up_at
        not_ready: list[str] = []
        for replica in world.replicas:
            assert replica.alive, f"{replica.name} died in the outage:\n{replica.log_tail()}"
            try:
                await replica.wait_ready(timeout=READY_WITHIN)
            except AssertionError as exc:
                not_ready.append(str(exc).splitlines()[0])

    outage_statuses = sorted({str(a.status) for a in during})
    late = world.answer_delays(traffic, since=up_at)
    slowest = max(late.values(), default=0.0)
    verdict.notes += [
        f"database down {up_at - down_at:.1f}s; webhook meanwhile: {outage_statuses}",
        f"first input stored {back_in:.1f}s after it returned, all settled after {quiet_in:.1f}s",
        f"slowest answer {slowest:.1f}s after the return (or its own delivery)",
        f"not ready {READY_WITHIN:.0f}s later: {not_ready or 'none'}",
    ]
    print(verdict.summary())
    verdict.assert_clean(world.logs())
    acks = [a for a in during if a.ok]
    assert not acks, f"2xx while the database was down: {acks[:5]}\n{verdict.summary()}"
    wrong = [a for a in during if a.status is not None and a.status < 500]
    assert not wrong, f"not a 5xx while the database was down: {wrong[:5]}"
    assert not not_ready, "\n".join(not_ready)
    slow = {t: round(d, 1) for t, d in late.items() if d > ANSWERED_WITHIN}
    assert not slow, f"answered over {ANSWERED_WITHIN:.0f}s after the return: {slow}"
