"""Whether the configured model can call tools: how to tell, and what this process last saw.

The Bot answers only through tools (send_user, sleep), so a model without tool calls would
leave every message unanswered, silently. Two signs name such a model: the server refuses a
request that carries tools (Ollama's documented 400 "<model> does not support tools"), or
the model, given tools, answers in plain text without calling one. `maka doctor` asks once
(`bot.llm.probe`); the Bot's turns record what they meet in `ToolSupport`, which /status shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bot.llm.types import ModelRequestRejected, ModelToolsUnsupported
from storage.types import utcnow

NEEDS_TOOLS = "the Bot needs tool calls; choose a model that supports them"
NO_TOOLS_REPLY = (
    "Sorry, I can't work with the model {model}: it cannot call tools, which I need. The "
    "owner can choose another model (`maka doctor` checks it); slash commands still work "
    "(try /help)."
)


def rejects_tools(exc: BaseException) -> bool:
    """True when the server refused a request because it carried tools (the provider tells
    such a refusal apart: bot/llm/error_kinds.py is_tools_unsupported)."""
    return isinstance(exc, ModelToolsUnsupported)


def answered_without_tool(model: str) -> str:
    return f"model {model} answered without calling the tool: {NEEDS_TOOLS}"


def refused_tools(model: str, exc: ModelRequestRejected) -> str:
    return f"model {model} refused tools ({exc.message[:200]}): {NEEDS_TOOLS}"


@dataclass
class ToolSupport:
    """The last verdict this process met: None until a turn used the model."""

    can_call_tools: bool | None = None
    reason: str = ""
    at: datetime | None = None

    def cannot(self, reason: str) -> None:
        self.can_call_tools, self.reason, self.at = False, reason, utcnow()

    def can(self) -> None:
        if self.can_call_tools is not True:
            self.can_call_tools, self.reason, self.at = True, "", utcnow()

    def line(self) -> str:
        if self.can_call_tools is None:
            return "tool calls: not seen yet since start-up (`maka doctor` checks them)"
        when = self.at.strftime("%Y-%m-%d %H:%M UTC") if self.at else "?"
        if self.can_call_tools:
            return f"tool calls: working (seen {when})"
        return f"tool calls: NOT working since {when}: {self.reason}"
