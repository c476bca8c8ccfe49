"""The owner's tasks, read as the owner: one unit `tasks:owner`, scope `owner:tasks`.

`GET task/v2/tasks?type=my_tasks` lists the tasks of the signed-in user, done and not
(`page_token`/`has_more`; each task's `guid`, `summary`, `description`, `due.timestamp` in
epoch milliseconds, `completed_at` ("0" while open), `updated_at`, `url`:
https://open.feishu.cn/document/task-v2/task/list). The list has no "changed since" filter,
so every sync lists them all; incremental by update time means a task whose `updated_at` did
not change writes nothing. A task is one record per version (`<guid>#u<updated_at>`): an
update is a new record and the previous one leaves search, as does a task gone from the list
(deleted), through the tombstones a recall uses (Page.removed).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from datetime import UTC, datetime
from typing import Any

from sources.base import Observation, Page, Removal, SyncRequest, Unit, UnitState
from sources.feishu.owner_api import OwnerApi
from sources.feishu.owner_units import TASKS_KIND, TASKS_SCOPE, TASKS_UNIT
from storage.repos.source_records import NewRecord

KIND = TASKS_KIND
UNIT = TASKS_UNIT
SCOPE = TASKS_SCOPE


def version_of(guid: str, updated: str) -> str:
    """A task's record id: one record per version, so an update is a new record."""
    return f"{guid}#u{updated}"


PAGE_SIZE = 100  # the list's maximum
BATCH = 100


def _ms(value: Any) -> datetime | None:
    text = str(value or "")
    return datetime.fromtimestamp(int(text) / 1000, UTC) if text.isdigit() and int(text) else None


def task_text(task: dict[str, Any]) -> str:
    """The task in words: what search finds and what the model reads."""
    lines = [str(task.get("summary") or "")]
    due = _ms((task.get("due") or {}).get("timestamp"))
    done = _ms(task.get("completed_at"))
    lines.append(f"status: done {done.isoformat()}" if done else "status: to do")
    if due is not None:
        lines.append(f"due: {due.isoformat()}")
    if task.get("description"):
        lines.append(str(task["description"]))
    return "\n".join(lines)


class OwnerTasks:
    kind = KIND

    def __init__(self, api: OwnerApi) -> None:
        self.api = api

    async def observe(self) -> Observation:
        return Observation([Unit(UNIT, SCOPE, "the owner's tasks")], {})

    async def listed(self) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        page_token = ""
        while True:
            params: dict[str, Any] = {"page_size": PAGE_SIZE, "type": "my_tasks"}
            if page_token:
                params["page_token"] = page_token
            data = await self.api.call("GET", "task/v2/tasks", params=params)
            for task in data.get("items") or []:
                if task.get("guid"):
                    found[str(task["guid"])] = task
            page_token = str(data.get("page_token") or "")
            if not data.get("has_more") or not page_token:
                return found

    async def sync(self, unit: UnitState, request: SyncRequest) -> AsyncGenerator[Page, None]:
        seen: dict[str, str] = dict((unit.synced_cursor or {}).get("updated") or {})
        tasks = await self.listed()
        gone = [g for g in seen if g not in tasks]
        for guid in gone:
            del seen[guid]
        removed = [Removal(UNIT, g, SCOPE) for g in gone]
        changed = [t for g, t in tasks.items() if seen.get(g) != str(t.get("updated_at"))]
        if not changed:
            yield Page(cursor={"updated": dict(seen)}, total=len(tasks), removed=removed)
            return
        for start in range(0, len(changed), BATCH):
            records = []
            for task in changed[start : start + BATCH]:
                guid = str(task["guid"])
                updated = str(task.get("updated_at"))
                if guid in seen:  # the previous version leaves search
                    keep = version_of(guid, str(task.get("updated_at") or "0"))
                    removed.append(Removal(UNIT, guid, SCOPE, keep=keep))
                seen[guid] = updated
                records.append(self._record(task))
            yield Page(records, {"updated": dict(seen)}, len(tasks), removed=removed)
            removed = []

    @staticmethod
    def _record(task: dict[str, Any]) -> NewRecord:
        guid, updated = str(task["guid"]), str(task.get("updated_at") or "0")
        return NewRecord(
            source=UNIT,
            external_id=version_of(guid, updated),
            scope=SCOPE,
            text=task_text(task),
            sent_at=_ms(updated) or _ms(task.get("created_at")),
            title=str(task.get("summary") or "") or None,
            payload={
                "kind": "task",
                "guid": guid,
                "url": task.get("url"),
                "due": (task.get("due") or {}).get("timestamp"),
                "completed_at": task.get("completed_at"),
            },
        )

    async def aclose(self) -> None:
        await self.api.aclose()
