"""Outages of the services around Maka, for a while, under steady traffic: the model
answering 5xx or not at all, Feishu answering sends with 429 or 5xx storms.

At the end every input is answered exactly once: by its reply, or, for a turn whose model
calls all failed, by the one "could not answer" reply of that turn (Maka's documented
behaviour). Nothing is lost, nothing doubled.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from bot.assistant.turn import MODEL_FAILED_REPLY as MODEL_FAILED
from tests.faults.feishu import SEND_PATH
from tests.faults.harness import FaultWorld, Verdict, wait_for
from tests.faults.traffic import Traffic

pytestmark = pytest.mark.faults

RATE = 10.0
SECONDS = 10.0


async def under_traffic(
    world: FaultWorld,
    prefix: str,
    start: Callable[[], None],
    over: Callable[[], Awaitable[bool]],
    stop: Callable[[], None],
    what: str,
) -> tuple[Verdict, Traffic]:
    """Traffic; a third of the way in `start()` the fault, until `over()`, then `stop()`."""
    async with world.traffic(prefix) as traffic:
        sending = asyncio.create_task(traffic.run(RATE, SECONDS))

        async def third_sent() -> bool:
            return len(traffic.inputs) >= RATE * SECONDS / 3

        await wait_for(third_sent, timeout=SECONDS, what="a third of the traffic sent")
        start()
        try:
            await wait_for(over, timeout=60, what=what)
        finally:
            stop()
        await sending
        return await world.settle(traffic), traffic


async def test_model_5xx_for_a_while(world: FaultWorld) -> None:
    """Long enough that some turns run out of retries (4 attempts) and say so."""
    model = world.model

    async def turns_gave_up() -> bool:
        rows = await world.query(
            "SELECT count(*) AS n FROM outbox WHERE content->>'text' = $1", MODEL_FAILED
        )
        return int(rows[0]["n"]) >= 2

    verdict, _ = await under_traffic(
        world, "m5xx", lambda: model.outage(503), turns_gave_up, lambda: model.outage(None),
        "two turns answering 'could not answer'",
    )  # fmt: skip
    verdict.notes.append(f"model requests failed: {model.failed_requests}")
    print(verdict.summary())
    verdict.assert_clean(world.logs())


async def test_model_timeouts_for_a_while(world: FaultWorld) -> None:
    model = world.model  # the replicas give up on a model call after MAKA_MODEL_TIMEOUT=5

    async def enough() -> bool:
        return model.timed_out >= 4

    verdict, _ = await under_traffic(
        world, "mhang", model.hang, enough, lambda: model.hang(False),
        "4 model calls timed out",
    )  # fmt: skip
    verdict.notes.append(f"model calls left hanging: {model.failed_requests}")
    print(verdict.summary())
    verdict.assert_clean(world.logs())


@pytest.mark.parametrize("status", [429, 503])
async def test_feishu_send_storm(world: FaultWorld, status: int) -> None:
    feishu = world.feishu

    def refused() -> int:
        return sum(1 for r in feishu.requests if r.path == SEND_PATH and r.status == status)

    async def enough() -> bool:
        return refused() >= 20

    verdict, _ = await under_traffic(
        world, f"f{status}", lambda: feishu.storm(status), enough, feishu.calm,
        f"20 sends answered {status}",
    )  # fmt: skip
    verdict.notes.append(f"sends answered {status}: {refused()}")
    print(verdict.summary())
    verdict.assert_clean(world.logs())
