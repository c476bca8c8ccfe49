"""One scripted model behind the whole app, routed by who is asking (the Bot, a task agent,
the reviewer, the summarizer or an indexing agent: their system prompts differ), so each role
gets its own script."""

from __future__ import annotations

import asyncio
import inspect
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from bot.llm.scripted import PlannedReply, ScriptedProvider
from bot.llm.types import Completion, Message, ToolSpec

ROLES = {
    "bot": "You are Maka",
    "agent": "You are a task agent",
    "review": "You review",
    "summary": "Write a coarse summary",
    "indexer": "You keep the index",
    "discovery": "You look for things",
    "judgement": "You judge what",
}
# Roles a test need not script: they answer this when nothing is queued.
DEFAULTS = {"summary": "A task."}
# A role with nothing scripted waits (like a slow model) for a test to add its step, but not
# forever: a mis-scripted test fails with the role's name instead of hanging.
UNSCRIPTED_DEADLINE = 60.0

Step = PlannedReply | Callable[[list[Message]], Any]


class RoutedModel:
    name = "routed-script"

    def __init__(self) -> None:
        self.scripts: dict[str, deque[Step]] = {role: deque() for role in ROLES}
        self.calls: dict[str, int] = dict.fromkeys(ROLES, 0)
        self._player = ScriptedProvider([])

    def add(self, role: str, *steps: Step) -> None:
        self.scripts[role].extend(steps)

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> Completion:
        role = role_of(messages)
        self.calls[role] += 1
        if not self.scripts[role] and role in DEFAULTS:
            self.scripts[role].append(ScriptedProvider.text(DEFAULTS[role]))
        try:
            async with asyncio.timeout(UNSCRIPTED_DEADLINE):
                while not self.scripts[role]:
                    await asyncio.sleep(0.05)
        except TimeoutError:
            raise AssertionError(
                f"the {role!r} model was called but the test scripted no step for it"
            ) from None
        step = await resolve_step(self.scripts[role].popleft(), messages)
        self._player.add(step)
        return await self._player.complete(messages, tools)


def role_of(messages: Sequence[Message]) -> str:
    """Who is asking, by the system prompt's opening words."""
    system = messages[0].content or ""
    return next(r for r, prefix in ROLES.items() if system.startswith(prefix))


async def resolve_step(step: Step, messages: Sequence[Message]) -> PlannedReply:
    """A planned reply, or what a step function (sync or async) makes of the messages."""
    if callable(step) and not isinstance(step, PlannedReply):
        step = step(list(messages))
        if inspect.isawaitable(step):
            step = await step
    assert isinstance(step, PlannedReply)
    return step


send = ScriptedProvider.tool_call
text = ScriptedProvider.text
# The reviewer answers only through its verdict tool (bot/matters/review.py).
APPROVE = send("verdict", {"decision": "approve", "reason": "ok"})


def reject(reason: str) -> PlannedReply:
    return send("verdict", {"decision": "reject", "reason": reason})
