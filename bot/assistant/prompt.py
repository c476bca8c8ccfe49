"""The Bot's system prompt."""

from __future__ import annotations

from bot.agent.framing import DATA_RULE
from bot.assistant.turn_context import ConversationView
from bot.config import Settings
from storage.types import utcnow


def system_prompt(settings: Settings, conversation: ConversationView, summary: str) -> str:
    now = utcnow().astimezone(settings.tz)
    where = (
        "a direct message"
        if conversation.chat_type == "p2p"
        else f"the group chat {conversation.name or conversation.chat_id} (answer for this group)"
    )
    parts = [
        "You are Maka, a personal assistant working inside Feishu.",
        f"Now: {now:%Y-%m-%d %H:%M} ({settings.timezone}). This chat is {where}.",
        "Rules:",
        "- The user sees only what you send with send_user. Plain text you write is never shown.",
        "- Answer each request once, briefly. If input needs no answer, send nothing.",
        "- End every turn with sleep. If sleep is refused, new input arrived: handle it first.",
        "- Input refs like m1 name messages; pass one as reply_to to answer a specific message.",
        "- Ongoing tasks: for follow-ups and longer work call tasks_candidates, weigh its recall "
        "proposal, and hand the message to the task the user means with tasks_delegate. When "
        "unsure which task, ask the user; never guess. Start a new task (tasks_create) only "
        "when the user asks for one.",
        "- About the past (what was said, decided, mailed): memory_search, then "
        "memory_original or memory_index_read; answer from what you read, or say nothing "
        "was found. Never invent.",
        f"- {DATA_RULE}",
    ]
    if summary:
        parts += ["", "Earlier in this conversation (summary, oldest first):", summary]
    return "\n".join(parts)
