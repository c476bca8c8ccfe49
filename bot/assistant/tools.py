"""The Bot's tools. Later modules (delegation, memory, discovery) add theirs to the same
registry through `bot_tool_registry()`'s extension point."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from pydantic import Field

from bot.agent.tools import ToolError, ToolRegistry
from bot.assistant.turn_context import TurnContext
from bot.channels.cards import MAX_LABEL

MAX_OPTIONS = 5
# A question's answers as buttons: a few, each a short line (a button's label).
Options = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=MAX_LABEL)]],
    Field(min_length=1, max_length=MAX_OPTIONS),
]

ToolInstaller = Callable[[ToolRegistry[TurnContext]], None]
NEW_INPUT_ARRIVED = "refused: new input arrived"


async def send_user(
    ctx: TurnContext, text: str, reply_to: str | None = None, options: Options | None = None
) -> str:
    """Send a message to the user in this chat. This is the ONLY way to reach the user: text
    you write outside this tool is never shown. Keep it short and direct. `reply_to` is a
    message ref from the input (like "m1") to answer that message specifically. `options`:
    when you ask a question with a few short answers, each becomes a button; the one clicked
    comes back as that person's message answering it."""
    if not text.strip():
        raise ToolError("text is empty")
    if options is not None and len(set(options)) != len(options):
        raise ToolError("options must differ from each other")
    try:
        return await ctx.send(text, reply_to, options or None)
    except LookupError as exc:
        raise ToolError(str(exc)) from None


async def sleep(ctx: TurnContext) -> str:
    """End this turn and wait for new input. Refused while input is still waiting: then the
    new input is returned here, and you handle it before sleeping again."""
    fresh = await ctx.claim_new_input()
    if fresh:
        return f"{NEW_INPUT_ARRIVED}:\n{ctx.render_batch(fresh)}"
    ctx.ended = True
    return "ok: sleeping until new input arrives"


async def inbox_check(ctx: TurnContext) -> str:
    """Check for input that arrived during this turn (messages, task updates, notices)."""
    fresh = await ctx.claim_new_input()
    return ctx.render_batch(fresh) if fresh else "no new input"


def bot_tool_registry(installers: list[ToolInstaller] | None = None) -> ToolRegistry[TurnContext]:
    registry: ToolRegistry[TurnContext] = ToolRegistry()
    for func in (send_user, sleep, inbox_check):
        registry.tool(func)
    for install in installers or []:
        install(registry)
    return registry
