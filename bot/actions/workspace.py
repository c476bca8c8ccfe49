"""Action kinds in the owner's own Feishu workspace, done as the owner (their sign-in):
`create_task`, `complete_task` and `create_document`.

Exactly once, as the platform sees it:
- create_task sends the action's idempotency key as task/v2's `client_token`: the same
  request again answers the task it created (https://open.feishu.cn/document/task-v2/task/create).
- complete_task sets `completed_at` to the moment the action was approved, the same on every
  run, so a run again is the same change (https://open.feishu.cn/document/task-v2/task/patch).
- create_document: docx/v1 document create has no idempotency token. The new document's id
  is written on the action row (`note_result`) the moment Feishu answers; a run again finds
  it there and only adds the text, whose block create does take a `client_token`
  (https://open.feishu.cn/document/server-docs/docs/docs/docx-v1/document-block-children/create).
  Before creating, a run again also looks in the owner's root folder for a document of that
  title created since the approval (a crash between Feishu's answer and the note).

`SignInNeeded` is a permanent failure ("sign in again: ..."); Feishu refusing the request
(a non-zero code) too; an unreachable, rate-limited or failing Feishu is retried with backoff.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bot.actions.registry import ActionFailed, register_executor
from bot.owner.api import owner_api
from bot.owner.tokens import SignInNeeded, owner_user_token
from bot.services import Services
from sources.feishu.owner_api import FeishuError, OwnerApi
from storage.models import Action
from storage.repos import actions as repo

CREATE_TASK, COMPLETE_TASK, CREATE_DOCUMENT = "create_task", "complete_task", "create_document"
MAX_SUMMARY = 1000  # characters: a task's title
MAX_DOCUMENT = 100_000  # characters of a new document's text
SHOWN = 300
CREATED = "document created: "  # the note on the row, then the start of the result


def _api(services: Services) -> OwnerApi:
    async def token() -> str:
        try:
            return await owner_user_token(services)
        except SignInNeeded as exc:
            raise ActionFailed(str(exc)) from None

    return owner_api(services.settings, services.db, token)


def _quoted(text: str) -> str:
    return f"“{text if len(text) <= SHOWN else text[: SHOWN - 1] + '…'}”"


def _required(params: dict[str, Any], name: str, most: int) -> str:
    value = str(params.get(name) or "").strip()
    if not value:
        raise ValueError(f"the {name} is empty")
    if len(value) > most:
        raise ValueError(f"the {name} is longer than {most} characters")
    return value


def _due(params: dict[str, Any]) -> datetime | None:
    raw = str(params.get("due") or "").strip()
    if not raw:
        return None
    try:
        due = datetime.fromisoformat(raw)
    except ValueError:
        raise ValueError("the due time is not an ISO date and time") from None
    if due.tzinfo is None:
        raise ValueError("the due time needs its time zone (like 2026-12-07T18:00+08:00)")
    return due


# ---- in plain words (the approval card) ---------------------------------------------------


def describe_create_task(params: dict[str, Any]) -> str:
    summary, due = _required(params, "summary", MAX_SUMMARY), _due(params)
    words = f"create a Feishu task as the owner: {_quoted(summary)}"
    if due is not None:
        words += f", due {due.isoformat(timespec='minutes')}"
    if params.get("assignee"):
        words += f", assigned to {params['assignee']}"
    return words


def describe_complete_task(params: dict[str, Any]) -> str:
    guid = _required(params, "guid", 100)
    return f"mark the owner's Feishu task {_quoted(str(params.get('title') or guid))} done"


def describe_create_document(params: dict[str, Any]) -> str:
    title = _required(params, "title", 800)
    text = _required(params, "text", MAX_DOCUMENT)
    return f"create a Feishu document as the owner: {_quoted(title)} with {_quoted(text)}"


# ---- executors ----------------------------------------------------------------------------


async def _call(api: OwnerApi, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
    try:
        return await api.call(method, path, **kwargs)
    except FeishuError as exc:
        raise ActionFailed(str(exc)) from None


def _checked(action: Action, describe: Any) -> None:
    try:
        describe(action.params)
    except ValueError as exc:
        raise ActionFailed(str(exc)) from None


async def create_task(services: Services, action: Action, key: str) -> str:
    _checked(action, describe_create_task)
    params = action.params
    body: dict[str, Any] = {"summary": str(params["summary"]).strip(), "client_token": key}
    due = _due(params)
    if due is not None:
        body["due"] = {"timestamp": str(int(due.timestamp() * 1000)), "is_all_day": False}
    if params.get("assignee"):
        body["members"] = [{"id": str(params["assignee"]), "type": "user", "role": "assignee"}]
    api = _api(services)
    try:
        data = await _call(
            api, "POST", "task/v2/tasks", params={"user_id_type": "open_id"}, body=body
        )
    finally:
        await api.aclose()
    task = data.get("task") or {}
    return f"task created: {task.get('guid')} {task.get('url') or ''}".strip()


async def complete_task(services: Services, action: Action, key: str) -> str:
    _checked(action, describe_complete_task)
    at = action.decided_at or action.created_at  # the same on every run
    body = {"task": {"completed_at": str(int(at.timestamp() * 1000))}}
    api = _api(services)
    try:
        await _call(
            api,
            "PATCH",
            f"task/v2/tasks/{action.params['guid']}",
            body={**body, "update_fields": ["completed_at"]},
        )
    finally:
        await api.aclose()
    return f"task done: {action.params.get('title') or action.params['guid']}"


async def create_document(services: Services, action: Action, key: str) -> str:
    _checked(action, describe_create_document)
    title, text = str(action.params["title"]).strip(), str(action.params["text"])
    api = _api(services)
    try:
        document_id = await _created_before(services, api, action, title)
        if document_id is None:
            # Not tried again here: a lost answer may have created it (the worker's next try
            # looks for it first).
            data = await _call(api, "POST", "docx/v1/documents", body={"title": title}, retry=False)
            document_id = str((data.get("document") or {}).get("document_id") or "")
            if not document_id:
                raise ActionFailed("Feishu created no document (no document_id in its answer)")
            async with services.db.write() as tx:
                await repo.note_result(tx, action.id, CREATED + document_id)
        children = [
            {"block_type": 2, "text": {"elements": [{"text_run": {"content": paragraph}}]}}
            for paragraph in text.split("\n")
        ]
        await _call(
            api,
            "POST",
            f"docx/v1/documents/{document_id}/blocks/{document_id}/children",
            params={"client_token": key},
            body={"children": children, "index": 0},
        )
    finally:
        await api.aclose()
    return f"{CREATED}{document_id} ({title})"


async def _created_before(
    services: Services, api: OwnerApi, action: Action, title: str
) -> str | None:
    """The document an earlier run of this action created: noted on the row, or (a crash
    before the note) one of this title in the root folder created since the approval."""
    async with services.db.read() as tx:
        row = await repo.get(tx, action.id)
    noted = (row.result or "") if row is not None else ""
    if noted.startswith(CREATED):
        return noted.removeprefix(CREATED).split()[0]
    if action.attempts <= 1:
        return None  # the first run: nothing can have been created yet
    since = (action.decided_at or action.created_at).timestamp()
    # The first page of the root folder, where a document made without a folder goes.
    data = await _call(api, "GET", "drive/v1/files", params={"page_size": 200})
    for file in data.get("files") or []:
        created = str(file.get("created_time") or "0")
        if file.get("name") == title and created.isdigit() and int(created) >= int(since):
            return str(file.get("token"))
    return None


def register_workspace_kinds() -> None:
    register_executor(CREATE_TASK, create_task, describe=describe_create_task)
    register_executor(COMPLETE_TASK, complete_task, describe=describe_complete_task)
    register_executor(CREATE_DOCUMENT, create_document, describe=describe_create_document)
