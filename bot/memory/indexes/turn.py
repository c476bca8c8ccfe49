"""One indexing turn: the agent reads a fixed range's records in batches, writes entries,
and checkpoints. What the turn achieved is returned, not stored: the maintenance worker
decides what moves (bot/memory/indexes/maintenance.py)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from bot.agent.framing import DATA_RULE, quote_data
from bot.agent.loop import AgentLoop
from bot.agent.tools import ToolRegistry
from bot.llm.client import ModelClient
from bot.llm.types import Message, ModelError
from bot.memory.indexes.tools import IndexerContext
from storage.models import MemoryIndex

CHECKPOINT_NOW = (
    "You have not checkpointed. Call checkpoint: complete=true if every record of the range "
    "is read and organized, else complete=false."
)


@dataclass(frozen=True)
class TurnOutcome:
    finished: str | None  # "complete" | "partial" | None (failed)
    read_to: int
    written: int
    error: str | None = None
    note: str = ""


def system_prompt(index: MemoryIndex) -> str:
    return "\n".join(
        [
            f"You keep the index {index.name!r} of a personal assistant's memory.",
            "You organize synced chat messages and mails into entries by the owner's criteria.",
            "Read the range with records_read (in batches), look at existing entries with "
            "entries_read, and write entries with entry_write: one entry per thing the "
            "criteria care about, its text short and factual, its refs the records it came "
            "from. Update an entry rather than duplicating it. Records that do not match the "
            "criteria need no entry. End with checkpoint.",
            "You never talk to anyone; you only keep this index.",
            DATA_RULE,
        ]
    )


class IndexerTurn:
    def __init__(
        self,
        model: ModelClient,
        tools: ToolRegistry[IndexerContext],
        *,
        timeout: float,
        max_steps: int = 24,
    ) -> None:
        self.model, self.tools, self.timeout, self.max_steps = model, tools, timeout, max_steps

    async def run(self, index: MemoryIndex, ctx: IndexerContext) -> TurnOutcome:
        prompt = [
            Message.system(system_prompt(index)),
            Message.user(
                quote_data("criteria", index.criteria)
                + f"\nThis turn's range: records after rec-{ctx.start} up to "
                f"rec-{ctx.range_end}."
            ),
        ]
        loop = AgentLoop(self.model, self.tools, purpose="index_turn", max_steps=self.max_steps)
        try:
            async with asyncio.timeout(self.timeout):
                result = await loop.run(ctx, prompt, ended=lambda c: c.finished is not None)
                if ctx.finished is None:
                    prompt = [*prompt, *result.produced, Message.user(CHECKPOINT_NOW)]
                    await loop.run(ctx, prompt, ended=lambda c: c.finished is not None)
        except TimeoutError:
            return self._failed(ctx, f"the indexing turn took longer than {self.timeout:.0f}s")
        except ModelError as exc:
            return self._failed(ctx, f"the model failed: {exc}")
        if ctx.finished is None:
            return self._failed(ctx, "the indexing turn ended without a checkpoint")
        return TurnOutcome(ctx.finished, ctx.read_to, ctx.written, note=ctx.note)

    @staticmethod
    def _failed(ctx: IndexerContext, error: str) -> TurnOutcome:
        return TurnOutcome(None, ctx.read_to, ctx.written, error=error)
