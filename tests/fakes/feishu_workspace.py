"""The owner's documents and tasks in the Feishu fake, read and written with a user's token
(feishu_oauth.py issues them; a tenant token is refused, as these APIs act as the user):

- GET  /open-apis/drive/v1/files?page_size&page_token  (no folder_token: the root folder)
  `data.files[]` {token, name, type, parent_token, url, created_time, modified_time (epoch
  seconds, strings), owner_id}, `has_more`, `next_page_token`.
  https://open.feishu.cn/document/server-docs/docs/drive-v1/folder/list
- GET  /open-apis/wiki/v2/spaces?page_size&page_token  `data.items[]` {space_id, name},
  `has_more`, `page_token`.  https://open.feishu.cn/document/server-docs/docs/wiki-v2/space/list
- GET  /open-apis/wiki/v2/spaces/:space_id/nodes?parent_node_token  `data.items[]`
  {space_id, node_token, obj_token, obj_type, parent_node_token, has_child, title,
  obj_edit_time (epoch seconds, string)}; page_size at most 50.
  https://open.feishu.cn/document/server-docs/docs/wiki-v2/space-node/list
- GET  /open-apis/docx/v1/documents/:document_id/raw_content  `data.content`; errors 1770002
  not found, 1770003 deleted, 1770032 no permission.
  https://open.feishu.cn/document/server-docs/docs/docs/docx-v1/document/raw_content
- POST /open-apis/docx/v1/documents {title, folder_token?}: `data.document` {document_id,
  revision_id, title}, in the root folder when no folder is given (no idempotency token).
  https://open.feishu.cn/document/server-docs/docs/docs/docx-v1/document/create
- POST /open-apis/docx/v1/documents/:document_id/blocks/:block_id/children?client_token
  {children: [{block_type: 2, text: {elements: [{text_run: {content}}]}}], index}: the
  paragraphs added; a client_token used before adds nothing again.
  https://open.feishu.cn/document/server-docs/docs/docs/docx-v1/document-block-children/create
- GET  /open-apis/task/v2/tasks?type=my_tasks&page_size&page_token  `data.items[]`,
  `has_more`, `page_token`; a task: {guid, summary, description, due {timestamp (ms),
  is_all_day}, completed_at ("0" while open), created_at, updated_at (ms strings), status
  (todo|done), url, members[]}.  https://open.feishu.cn/document/task-v2/task/list
- POST /open-apis/task/v2/tasks  {summary, due, members, client_token}: `data.task`; a
  client_token used before answers the task it created ("幂等").
  https://open.feishu.cn/document/task-v2/task/create
- PATCH /open-apis/task/v2/tasks/:guid {task: {completed_at}, update_fields: [...]}:
  `data.task`; 1470404 an unknown (or deleted) task.
  https://open.feishu.cn/document/task-v2/task/patch
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from .feishu_models import FeishuApiError

DOC_NOT_FOUND = (1770002, "not found")
DOC_DELETED = (1770003, "resource deleted")
DOC_FORBIDDEN = (1770032, "forBidden")
TASK_INVALID = (1470400, "invalid params")
TASK_FORBIDDEN = (1470403, "permission denied")
TASK_NOT_FOUND = (1470404, "task not found")
USER_TOKEN_NEEDED = (99991668, "Invalid access token for authorization. user token required")


@dataclass
class FakeDoc:
    token: str
    name: str
    text: str
    modified_time: int
    owner_id: str = "ou_owner"
    deleted: bool = False
    forbidden: bool = False
    client_tokens: set[str] = field(default_factory=set)
    in_root: bool = True  # listed in the Drive root folder (a wiki node's document is not)

    def file(self) -> dict[str, Any]:
        return {
            "token": self.token,
            "name": self.name,
            "type": "docx",
            "parent_token": "fldroot",
            "url": f"https://example.feishu.cn/docx/{self.token}",
            "created_time": str(self.modified_time),
            "modified_time": str(self.modified_time),
            "owner_id": self.owner_id,
        }


@dataclass
class FakeTask:
    guid: str
    summary: str
    updated_at: int  # ms
    due_ms: int | None = None
    completed_at: int = 0
    description: str = ""
    members: list[dict[str, Any]] = field(default_factory=list)
    client_token: str | None = None

    def json(self) -> dict[str, Any]:
        task: dict[str, Any] = {
            "guid": self.guid,
            "summary": self.summary,
            "description": self.description,
            "completed_at": str(self.completed_at),
            "created_at": str(self.updated_at),
            "updated_at": str(self.updated_at),
            "status": "done" if self.completed_at else "todo",
            "url": f"https://applink.feishu.cn/client/todo/detail?guid={self.guid}",
            "members": self.members,
        }
        if self.due_ms is not None:
            task["due"] = {"timestamp": str(self.due_ms), "is_all_day": False}
        return task


class WorkspaceHandlers:
    """Mixed into FeishuFake: needs `now()`, `authenticate`, `user_tokens`."""

    def __init__(self) -> None:
        self.docs: dict[str, FakeDoc] = {}
        self.tasks: dict[str, FakeTask] = {}
        # space_id -> (node_token, parent node_token or "", document token)
        self.wiki: dict[str, list[tuple[str, str, str]]] = {}
        self.list_page_size_cap = 200

    # what FeishuFake provides
    user_tokens: dict[str, Any]

    def now(self) -> float:
        raise NotImplementedError

    def authenticate(self, request: web.Request) -> str:
        raise NotImplementedError

    def add_workspace_routes(self, app: web.Application) -> None:
        app.router.add_get("/open-apis/drive/v1/files", self._list_files)
        app.router.add_get(
            "/open-apis/docx/v1/documents/{document_id}/raw_content", self._raw_content
        )
        app.router.add_post("/open-apis/docx/v1/documents", self._create_document)
        app.router.add_post(
            "/open-apis/docx/v1/documents/{document_id}/blocks/{block_id}/children",
            self._add_blocks,
        )
        app.router.add_get("/open-apis/wiki/v2/spaces", self._list_spaces)
        app.router.add_get("/open-apis/wiki/v2/spaces/{space_id}/nodes", self._list_nodes)
        app.router.add_get("/open-apis/task/v2/tasks", self._list_tasks)
        app.router.add_post("/open-apis/task/v2/tasks", self._create_task)
        app.router.add_patch("/open-apis/task/v2/tasks/{guid}", self._patch_task)

    # ---- test controls ---------------------------------------------------------------------

    def put_doc(self, token: str, name: str, text: str) -> FakeDoc:
        """Create or edit a document of the owner's root folder (its edit time moves on)."""
        before = self.docs.get(token)
        modified = int(self.now())
        if before is not None and modified <= before.modified_time:
            modified = before.modified_time + 1
        self.docs[token] = FakeDoc(token, name, text, modified)
        return self.docs[token]

    def put_wiki_doc(
        self, space_id: str, token: str, title: str, text: str, *, parent: str = ""
    ) -> str:
        """A docx node in a wiki space (under `parent`, a node token); its node token."""
        doc = self.put_doc(token, title, text)
        doc.in_root = False
        node = "wik" + token
        self.wiki.setdefault(space_id, []).append((node, parent, token))
        return node

    def put_task(self, summary: str, *, due_ms: int | None = None) -> FakeTask:
        guid = secrets.token_hex(8)
        self.tasks[guid] = FakeTask(guid, summary, self._ms(), due_ms)
        return self.tasks[guid]

    def _ms(self) -> int:
        now = int(self.now() * 1000)
        latest = max((t.updated_at for t in self.tasks.values()), default=0)
        return max(now, latest + 1)

    # ---- endpoints -------------------------------------------------------------------------

    def _user(self, request: web.Request) -> str:
        """The open_id behind a user access token; a tenant token is refused."""
        self.authenticate(request)
        token = request.headers.get("Authorization", "").partition(" ")[2].strip()
        if not token.startswith("u-"):
            raise FeishuApiError(USER_TOKEN_NEEDED)
        return str(self.user_tokens[token].open_id)

    @staticmethod
    def _page(request: web.Request, cap: int) -> tuple[int, int]:
        try:
            size = min(int(request.query.get("page_size", "50")), cap)
            start = int(request.query.get("page_token") or 0)
        except ValueError:
            raise FeishuApiError(TASK_INVALID) from None
        return max(size, 1), start

    async def _list_files(self, request: web.Request) -> web.Response:
        owner = self._user(request)
        if request.query.get("folder_token"):
            raise FeishuApiError(DOC_NOT_FOUND)  # only the root folder here
        size, start = self._page(request, self.list_page_size_cap)
        files = [
            d.file()
            for d in self.docs.values()
            if d.in_root and not d.deleted and d.owner_id == owner
        ]
        # drive/v1 names its list `files` and its token `next_page_token`
        return self._listed(files, start, size, key="files", token="next_page_token")

    async def _raw_content(self, request: web.Request) -> web.Response:
        self._user(request)
        doc = self.docs.get(request.match_info["document_id"])
        if doc is None:
            raise FeishuApiError(DOC_NOT_FOUND)
        if doc.deleted:
            raise FeishuApiError(DOC_DELETED)
        if doc.forbidden:
            raise FeishuApiError(DOC_FORBIDDEN, http_status=403)
        return web.json_response({"code": 0, "msg": "success", "data": {"content": doc.text}})

    async def _list_spaces(self, request: web.Request) -> web.Response:
        self._user(request)
        size, start = self._page(request, 50)
        spaces = [{"space_id": s, "name": f"space {s}"} for s in self.wiki]
        return self._listed(spaces, start, size)

    async def _list_nodes(self, request: web.Request) -> web.Response:
        self._user(request)
        nodes = self.wiki.get(request.match_info["space_id"])
        if nodes is None:
            raise FeishuApiError(DOC_NOT_FOUND)
        size, start = self._page(request, 50)
        parent = request.query.get("parent_node_token", "")
        items = []
        for node, above, token in nodes:
            doc = self.docs[token]
            if above != parent or doc.deleted:
                continue
            items.append(
                {
                    "space_id": request.match_info["space_id"],
                    "node_token": node,
                    "obj_token": token,
                    "obj_type": "docx",
                    "parent_node_token": above,
                    "has_child": any(a == node for _, a, _ in nodes),
                    "title": doc.name,
                    "obj_edit_time": str(doc.modified_time),
                }
            )
        return self._listed(items, start, size)

    @staticmethod
    def _listed(
        items: list[dict[str, Any]],
        start: int,
        size: int,
        *,
        key: str = "items",
        token: str = "page_token",
    ) -> web.Response:
        """One page of `items` from `start`, with `has_more` and, if there is more, the token
        of the next page (an offset here)."""
        more = start + size < len(items)
        data: dict[str, Any] = {key: items[start : start + size], "has_more": more}
        if more:
            data[token] = str(start + size)
        return web.json_response({"code": 0, "msg": "success", "data": data})

    async def _create_document(self, request: web.Request) -> web.Response:
        owner = self._user(request)
        body = await self._body(request)
        if body.get("folder_token"):
            raise FeishuApiError(DOC_NOT_FOUND)  # only the root folder here
        token = "dox" + secrets.token_hex(10)
        doc = FakeDoc(token, str(body.get("title") or ""), "", int(self.now()), owner)
        self.docs[token] = doc
        document = {"document_id": token, "revision_id": 1, "title": doc.name}
        return web.json_response({"code": 0, "msg": "success", "data": {"document": document}})

    async def _add_blocks(self, request: web.Request) -> web.Response:
        self._user(request)
        doc = self.docs.get(request.match_info["document_id"])
        if doc is None or request.match_info["block_id"] != doc.token:
            raise FeishuApiError(DOC_NOT_FOUND)
        if doc.deleted:
            raise FeishuApiError(DOC_DELETED)
        body = await self._body(request)
        token = request.query.get("client_token", "")
        texts = [
            "".join(
                str((e.get("text_run") or {}).get("content") or "")
                for e in (child.get("text") or {}).get("elements") or []
            )
            for child in body.get("children") or []
        ]
        if not token or token not in doc.client_tokens:
            doc.client_tokens.add(token)
            doc.text = "\n".join([*([doc.text] if doc.text else []), *texts])
            doc.modified_time = max(int(self.now()), doc.modified_time + 1)
        data = {"children": [{"block_type": 2} for _ in texts], "client_token": token}
        return web.json_response({"code": 0, "msg": "success", "data": data})

    async def _list_tasks(self, request: web.Request) -> web.Response:
        self._user(request)
        size, start = self._page(request, 100)
        return self._listed([t.json() for t in self.tasks.values()], start, size)

    async def _create_task(self, request: web.Request) -> web.Response:
        self._user(request)
        body = await self._body(request)
        summary = str(body.get("summary") or "")
        if not summary:
            raise FeishuApiError(TASK_INVALID, detail="summary is required")
        token = body.get("client_token")
        if token:
            for task in self.tasks.values():
                if task.client_token == token:  # the same request again: the same task
                    return self._task_answer(task)
        due = body.get("due") or {}
        guid = secrets.token_hex(8)
        task = FakeTask(
            guid,
            summary,
            self._ms(),
            int(due["timestamp"]) if due.get("timestamp") else None,
            description=str(body.get("description") or ""),
            members=list(body.get("members") or []),
            client_token=str(token) if token else None,
        )
        self.tasks[guid] = task
        return self._task_answer(task)

    async def _patch_task(self, request: web.Request) -> web.Response:
        self._user(request)
        task = self.tasks.get(request.match_info["guid"])
        if task is None:
            raise FeishuApiError(TASK_NOT_FOUND)
        body = await self._body(request)
        fields = body.get("update_fields") or []
        changes = body.get("task") or {}
        if not fields:
            raise FeishuApiError(TASK_INVALID, detail="update_fields is required")
        if "completed_at" in fields:
            task.completed_at = int(changes.get("completed_at") or 0)
        if "summary" in fields and changes.get("summary"):
            task.summary = str(changes["summary"])
        task.updated_at = self._ms()
        return self._task_answer(task)

    @staticmethod
    async def _body(request: web.Request) -> dict[str, Any]:
        try:
            body = json.loads(await request.read())
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise FeishuApiError(TASK_INVALID)
        return body

    @staticmethod
    def _task_answer(task: FakeTask) -> web.Response:
        return web.json_response({"code": 0, "msg": "success", "data": {"task": task.json()}})
