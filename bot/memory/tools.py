"""The Bot's recall tools: `memory_search`, `memory_original` and `memory_index_read`
(bot/memory/recall.py),
seen through the asker's visibility (bot/assistant/asking.py)."""

from __future__ import annotations

from bot.agent.tools import ToolRegistry
from bot.assistant.asking import asker_of
from bot.assistant.turn_context import TurnContext
from bot.memory import recall
from bot.parsing import ToolCount


async def _access(ctx: TurnContext) -> recall.MemoryAccess:
    services = ctx.services
    return recall.MemoryAccess(
        db=services.db,
        search=services.search,
        visibility=(await asker_of(ctx)).visibility,
        tz=services.settings.tz,
        tool_output=services.settings.index_tool_output,
    )


async def memory_search(
    ctx: TurnContext, query: str, limit: ToolCount = recall.DEFAULT_HITS
) -> str:
    """Search chat history, mail and task logs this chat may see. Each hit has a ref for
    memory_original."""
    return await recall.memory_search(await _access(ctx), query, limit)


async def memory_original(ctx: TurnContext, ref: str, offset: ToolCount = 0) -> str:
    """Read one message or mail found by memory_search, by its ref (rec-12, log-3-7), in
    parts of 4000 characters (`offset` for the next part)."""
    return await recall.memory_original(await _access(ctx), ref, offset)


async def memory_index_read(ctx: TurnContext, name: str, query: str | None = None) -> str:
    """Read a named memory index (see /index): its entries, or those containing `query`."""
    return await recall.memory_index_read(await _access(ctx), name, query)


def install_memory_tools(registry: ToolRegistry[TurnContext]) -> None:
    for tool in (memory_search, memory_original, memory_index_read):
        registry.tool(tool)
