"""The action tools, listed once: each module's install function is in `ACTION_TOOLS`, and
both the Bot (`install_bot_action_tools`, bot/assistant/component.py) and task agents
(`install_task_action_tools`, handed to Matters by bot/runtime.py) get every one, each agent's
context adapted to an `ActionContext` (bot/actions/context.py). A new tools module plugs in
with one line here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bot.actions.calendar_tools import install_calendar_tools
from bot.actions.context import ActionTools, for_matter, for_turn
from bot.actions.mail_tools import install_mail_tools
from bot.actions.tools import install_message_tools
from bot.actions.workspace_tools import install_workspace_tools
from bot.agent.tools import ToolRegistry
from bot.assistant.turn_context import TurnContext
from bot.matters.tools import MatterTurnContext

ACTION_TOOLS: tuple[Callable[[ActionTools[Any]], None], ...] = (
    install_message_tools,
    install_calendar_tools,
    install_workspace_tools,
    install_mail_tools,
)


def install_bot_action_tools(registry: ToolRegistry[TurnContext]) -> None:
    tools = ActionTools(registry, for_turn)
    for install in ACTION_TOOLS:
        install(tools)


def install_task_action_tools(registry: ToolRegistry[MatterTurnContext]) -> None:
    tools = ActionTools(registry, for_matter)
    for install in ACTION_TOOLS:
        install(tools)
