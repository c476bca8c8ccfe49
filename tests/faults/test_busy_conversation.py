"""One conversation that never goes quiet: a user who keeps writing while the model is slow,
so every `sleep` of the Bot is refused with new input, step after step, until the agent
loop stops at its step limit (10) right after a refused `sleep` has claimed new input. That
input was never shown to the model: it stays undelivered and the next turn answers it (it
used to be marked handled with the rest of the batch and never answered).
"""

from __future__ import annotations

import pytest

from tests.faults.harness import USERS, FaultWorld

pytestmark = pytest.mark.faults

RATE = 5.0  # messages a second, all from one user
SECONDS = 16.0  # past the first turn's 3 s gathering and its 10 steps
STEP = 0.4  # seconds the model takes per step: two new inputs arrive meanwhile


async def test_a_busy_conversation_answers_every_input(world: FaultWorld) -> None:
    world.model.slow(STEP)
    async with world.traffic("busy", users=USERS[:1]) as traffic:
        await traffic.run(RATE, SECONDS)
        verdict = await world.settle(traffic)
    print(verdict.summary())
    verdict.assert_clean(world.logs())
