"""One conversation that never goes quiet: a user who keeps writing while the model is slow,
so every `sleep` of the Bot is refused with new input, step after step.

Known product bug (kept as a strict xfail): the agent loop stops at its step limit (10) right
after a refused `sleep` has claimed new input into the turn's batch; the turn then marks the
whole batch handled (`BotTurn._commit`), so that input is never answered, and nobody is told.
"""

from __future__ import annotations

import pytest

from tests.faults.harness import USERS, FaultWorld

pytestmark = pytest.mark.faults

RATE = 5.0  # messages a second, all from one user
SECONDS = 16.0  # past the first turn's 3 s gathering and its 10 steps
STEP = 0.4  # seconds the model takes per step: two new inputs arrive meanwhile


class InputsDropped(AssertionError):
    """Inputs marked handled without an answer (and nothing else wrong)."""


@pytest.mark.xfail(
    strict=True,
    raises=InputsDropped,
    reason="input claimed by a refused sleep at the agent loop's last step is marked "
    "delivered unanswered (bot/assistant/turn.py _commit after Stop.STEP_LIMIT)",
)
async def test_a_busy_conversation_answers_every_input(world: FaultWorld) -> None:
    world.model.slow(STEP)
    async with world.traffic("busy", users=USERS[:1]) as traffic:
        await traffic.run(RATE, SECONDS)
        verdict = await world.settle(traffic)
    print(verdict.summary())
    problems = verdict.problems()
    dropped = [p for p in problems if "never answered" in p]
    if dropped and len(dropped) == len(problems):
        raise InputsDropped("\n".join([verdict.summary(), *problems]))
    verdict.assert_clean(world.logs())
