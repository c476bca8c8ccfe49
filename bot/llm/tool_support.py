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

from bot.llm.types import ModelRequestRejected
from storage.types import utcnow

# Lower-cased fragments of the servers' refusals of a request with tools.
_NO_TOOLS_MARKERS = (
    # Ollama (HTTP 400, OpenAI-style error body on /v1), e.g.
    # {"error":{"message":"stablelm2:latest does not support tools","type":"api_error"}}:
    # https://github.com/ollama/ollama/issues/6027
    "does not support tools",
    # vLLM started without a tool parser (HTTP 400): "\"auto\" tool choice requires
    # --enable-auto-tool-choice and --tool-call-parser to be set" (vLLM's tool-calling docs,
    # https://docs.vllm.ai/en/latest/features/tool_calling.html; wording not confirmed here)
    "--enable-auto-tool-choice",
    # llama.cpp's server without --jinja: "tools param requires --jinja flag" (not confirmed)
    "requires --jinja",
)

NEEDS_TOOLS = "the Bot needs tool calls; choose a model that supports them"
NO_TOOLS_REPLY = (
    "The configured model cannot call tools, so I cannot answer; the owner can check "
    "`maka doctor`. Slash commands still work (try /help)."
)


def rejects_tools(exc: BaseException) -> bool:
    """True when the server refused a request because it carried tools."""
    if not isinstance(exc, ModelRequestRejected):
        return False
    text = exc.message.lower()
    return any(marker in text for marker in _NO_TOOLS_MARKERS)


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
