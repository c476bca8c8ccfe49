"""The names of the sources read as the owner, apart from their adapters: the Bot's tools and
the sync commands name them without loading the Feishu SDK the adapters import."""

from __future__ import annotations

CALENDAR_KIND = "calendar"
CALENDAR_UNIT = f"{CALENDAR_KIND}:primary"
CALENDAR_SCOPE = "owner:calendar"
TASKS_KIND = "tasks"
TASKS_UNIT = "tasks:owner"
TASKS_SCOPE = "owner:tasks"
# Published when a page of the owner's calendar or tasks commits: what a Matter waiting for
# an event or a task listens to (bot/matters/waits.py).
CHANGED_TOPIC = "owner-items"
WATCHED_UNITS = (CALENDAR_UNIT, TASKS_UNIT)

CHATS_KIND = "chats"


def chat_unit(chat_id: str) -> str:
    """A chat read as the owner: its own unit, so the owner can share one chat alone."""
    return f"{CHATS_KIND}:{chat_id}"


def owner_chat_scope(chat_id: str) -> str:
    return f"owner:chat:{chat_id}"
