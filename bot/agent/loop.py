"""The agent loop: ask the model, run the tools it calls, feed the results back, until it
stops calling tools, a tool ends the turn, or the step limit is reached."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Generic, TypeVar

from bot.agent.framing import quote_data
from bot.agent.tools import ToolOutcome, ToolRegistry
from bot.llm.client import ModelClient
from bot.llm.types import Message, ToolCall

log = logging.getLogger(__name__)
Ctx = TypeVar("Ctx")
# Told of each tool call before it runs (outcome None) and after (its outcome): how a caller
# follows a turn's work (the Bot's progress card) without the loop knowing of it.
ToolWatcher = Callable[[Ctx, ToolCall, ToolOutcome | None], Awaitable[None]]
# Told, while a streamed answer arrives, how many characters the model has written.
WritingWatcher = Callable[[Ctx, int], Awaitable[None]]


class Stop(StrEnum):
    NO_TOOL_CALLS = "no_tool_calls"
    ENDED = "ended"  # a tool (e.g. sleep) ended the turn
    STEP_LIMIT = "step_limit"


@dataclass
class LoopResult:
    stop: Stop
    steps: int
    produced: list[Message] = field(default_factory=list)  # assistant and tool messages
    outcomes: list[ToolOutcome] = field(default_factory=list)


class AgentLoop(Generic[Ctx]):
    def __init__(
        self,
        model: ModelClient,
        registry: ToolRegistry[Ctx],
        *,
        purpose: str,
        max_steps: int = 8,
        conversation_id: int | None = None,  # whose calls these are (costs per conversation)
    ) -> None:
        self.model = model
        self.registry = registry
        self.purpose = purpose
        self.max_steps = max_steps
        self.conversation_id = conversation_id

    async def run(
        self,
        ctx: Ctx,
        prompt: Sequence[Message],
        *,
        ended: Callable[[Ctx], bool] = lambda _ctx: False,
        shown: Callable[[Ctx], None] = lambda _ctx: None,
        on_tool: ToolWatcher[Ctx] | None = None,
        on_writing: WritingWatcher[Ctx] | None = None,
    ) -> LoopResult:
        """`shown(ctx)` runs before each model call: what the context holds by then reaches
        the model. A tool result of the last step, when the loop stops at its limit, never
        does, and the caller must not treat what it carried as handled."""
        messages = list(prompt)
        result = LoopResult(Stop.STEP_LIMIT, 0)
        tools = self.registry.specs()

        async def writing(chars: int) -> None:
            assert on_writing is not None
            await on_writing(ctx, chars)

        for step in range(1, self.max_steps + 1):
            result.steps = step
            shown(ctx)
            completion = await self.model.complete(
                messages,
                tools,
                purpose=self.purpose,
                conversation_id=self.conversation_id,
                on_progress=writing if on_writing is not None else None,
            )
            assistant = completion.as_message()
            messages.append(assistant)
            result.produced.append(assistant)
            if not completion.tool_calls:
                result.stop = Stop.NO_TOOL_CALLS
                return result
            for call in completion.tool_calls:
                if on_tool is not None:
                    await on_tool(ctx, call, None)
                outcome = await self.registry.run(ctx, call)
                if on_tool is not None:
                    await on_tool(ctx, call, outcome)
                result.outcomes.append(outcome)
                reply = Message.tool(
                    call.id, quote_data(f"tool:{call.name}", outcome.output), name=call.name
                )
                messages.append(reply)
                result.produced.append(reply)
            if ended(ctx):
                result.stop = Stop.ENDED
                return result
        log.warning("%s turn hit the step limit (%d)", self.purpose, self.max_steps)
        return result
