"""A Bot turn's progress card: shown once the turn does something that takes time (its first
tool call other than answering, sleeping or checking the inbox), one line of human words per
kind of step, "done" when the turn ends. A turn that answers at once shows none.

The card's key is the turn's key: a turn run again after a crash (same batch, same key)
reuses its card instead of making a second. The turn's end marks it done in the same
transaction as the batch (`bot/assistant/turn.py`); a turn that fails marks it failed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot import progress
from bot.agent.tools import ToolOutcome
from bot.assistant.turn_context import TurnContext
from bot.llm.types import ToolCall
from storage.repos.progress_cards import WORKING, Desired

# Talking to the user and waiting are not work the user waits for.
QUIET_TOOLS = frozenset({"send_user", "sleep", "inbox_check"})
STEP_WORDS = {
    "memory_search": "searching memory",
    "memory_original": "reading what memory found",
    "memory_index_read": "reading a memory index",
    "tasks_candidates": "looking through the tasks",
    "tasks_status": "checking a task",
    "tasks_delegate": "delegating to a task",
    "tasks_create": "starting a new task",
}
TITLE = "Working on it"
WRITING_STEP = "writing the answer"


def step_of(call: ToolCall) -> str:
    """A tool call in human words."""
    if call.name == "tasks_create" and isinstance(call.arguments.get("title"), str):
        return f"starting a new task: {call.arguments['title'][:80]}"
    return STEP_WORDS.get(call.name, call.name.replace("_", " "))


@dataclass
class TurnProgress:
    """Follows one turn's tool calls (the agent loop's `on_tool`)."""

    ctx: TurnContext
    steps: list[str] = field(default_factory=list)

    async def on_tool(self, ctx: TurnContext, call: ToolCall, outcome: ToolOutcome | None) -> None:
        if outcome is not None or call.name in QUIET_TOOLS:
            return
        if not ctx.services.settings.progress_cards:
            return
        step = step_of(call)
        if step in self.steps:  # the same tool again: still one line
            return
        self.steps.append(step)
        ctx.card_shown = True
        await progress.show(ctx.services.db, ctx.services.notifier, self._desired())

    async def on_writing(self, ctx: TurnContext, chars: int) -> None:
        """The model streams its answer: a card already shown says so, once (a turn that
        answers at once still shows none)."""
        if not ctx.card_shown or WRITING_STEP in self.steps:
            return
        self.steps.append(WRITING_STEP)
        await progress.show(ctx.services.db, ctx.services.notifier, self._desired())

    def _desired(self) -> Desired:
        ctx = self.ctx
        messages = [item for item in ctx.batch if item.is_message]
        latest = messages[-1] if messages else None
        # As the turn's replies do: in a DM a plain message, in a group or thread a reply.
        threaded = latest is not None and bool(latest.payload.get("thread_id"))
        as_reply = latest is not None and (ctx.conversation.chat_type != "p2p" or threaded)
        reply_to = latest.message_id if as_reply and latest is not None else None
        return Desired(
            key=ctx.turn_key,
            platform=ctx.conversation.platform,
            chat_id=ctx.conversation.chat_id,
            title=TITLE,
            steps=list(self.steps),
            status=WORKING,
            conversation_id=ctx.conversation.id,
            reply_to=reply_to,
            inbox_item_id=ctx.batch[0].id,
        )
