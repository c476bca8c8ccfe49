"""The Bot's tools for the owner's own workspace: create or complete a Feishu task, create a
document. Each proposes its action (bot/actions/registry.py `propose`, through the same
`proposed` as send_message) and returns the one line saying what happens now."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select

from bot.actions.context import ActionContext, ActionTools
from bot.actions.tools import proposed
from bot.actions.workspace import (
    COMPLETE_TASK,
    CREATE_DOCUMENT,
    CREATE_TASK,
    register_workspace_kinds,
)
from bot.agent.tools import ToolError
from sources.feishu.tasks import SCOPE as TASKS_SCOPE
from sources.feishu.tasks import UNIT as TASKS_SOURCE
from storage.models import SourceRecord
from storage.repos.source_records import is_tombstone


async def create_task(
    ctx: ActionContext, summary: str, reason: str, due: str = "", assignee: str = ""
) -> str:
    """Create a Feishu task as the owner: `summary` its title; `due` an ISO date and time
    (without a zone: the assistant's time zone), or empty; `assignee` a person's open_id
    (ou_…), or empty. It waits for the owner's approval unless the owner allowed it."""
    params: dict[str, object] = {"summary": summary.strip()}
    if due.strip():
        try:
            when = datetime.fromisoformat(due.strip())
        except ValueError:
            raise ToolError(f"due: {due!r} is not an ISO date and time") from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=ctx.services.settings.tz)
        params["due"] = when.isoformat()
    if assignee.strip():
        if not assignee.strip().startswith("ou_"):
            raise ToolError("assignee: give the person's open_id (ou_…)")
        params["assignee"] = assignee.strip()
    return await proposed(ctx, CREATE_TASK, params, reason)


async def complete_task(ctx: ActionContext, task: str, reason: str) -> str:
    """Mark one of the owner's Feishu tasks done: `task` is its title as synced (or its guid).
    It waits for the owner's approval unless the owner allowed it."""
    guid, title = await _task(ctx, task.strip())
    return await proposed(ctx, COMPLETE_TASK, {"guid": guid, "title": title}, reason)


async def create_document(ctx: ActionContext, title: str, text: str, reason: str) -> str:
    """Create a Feishu document as the owner, in their root folder: `title`, and `text` (one
    paragraph a line). It waits for the owner's approval unless the owner allowed it."""
    return await proposed(ctx, CREATE_DOCUMENT, {"title": title.strip(), "text": text}, reason)


async def _task(ctx: ActionContext, task: str) -> tuple[str, str]:
    """(guid, title) of a synced task, found by title or guid, only where the asker may see
    the owner's tasks (no one learns from the answer which tasks the owner has)."""
    visibility = (await ctx.asker()).visibility
    if not task or not visibility.sees_scope(TASKS_SCOPE):
        raise ToolError("no such task that I know: the owner's tasks are not visible here")
    async with ctx.services.db.read() as tx:
        rows = (
            await tx.scalars(
                select(SourceRecord)
                .where(SourceRecord.source == TASKS_SOURCE)
                .order_by(SourceRecord.id.desc())
                .limit(2000)
            )
        ).all()
    matches: dict[str, str] = {}
    for row in rows:
        if is_tombstone(row.payload):
            continue
        guid, title = str(row.payload.get("guid") or ""), row.title or ""
        if task in (guid, title) or task.lower() == title.lower():
            matches.setdefault(guid, title)
    if len(matches) != 1:
        problem = "no task" if not matches else "more than one task"
        raise ToolError(f"{problem} titled {task!r} that I know; give its exact title or guid")
    [(guid, title)] = matches.items()
    return guid, title


def install_workspace_tools(tools: ActionTools[Any]) -> None:
    register_workspace_kinds()
    for tool in (create_task, complete_task, create_document):
        tools.tool(tool)
