"""The fake's state and what every route needs: indexes, the task queue (processed at once
unless paused), test controls, JSON body reading, index lookup."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable
from typing import Any

from aiohttp import web

from .errors import ApiError
from .state import _Index, _now, _Task


class _Store:
    """Base of the route mixins; `FakeMeilisearch` adds the server around it."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._indexes: dict[str, _Index] = {}
        self._tasks: list[_Task] = []
        self._paused = False
        self._fail_next: list[tuple[str, str]] = []

    # -- test controls --------------------------------------------------------------------

    def pause_tasks(self) -> None:
        """New tasks stay `enqueued` (the oldest shows `processing`) until `resume_tasks`."""
        with self._lock:
            self._paused = True

    def resume_tasks(self) -> None:
        with self._lock:
            self._paused = False
            self._process()

    def fail_next_task(self, code: str = "internal", message: str = "injected failure") -> None:
        with self._lock:
            self._fail_next.append((code, message))

    def documents(self, index_uid: str) -> list[dict[str, Any]]:
        with self._lock:
            index = self._indexes.get(index_uid)
            return [copy.deepcopy(d) for d in index.documents.values()] if index else []

    def tasks(self, index_uid: str | None = None, type_: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            return [
                t.view()
                for t in self._tasks
                if (index_uid is None or t.index_uid == index_uid)
                and (type_ is None or t.type == type_)
            ]

    # -- route helpers --------------------------------------------------------------------

    @staticmethod
    async def _json(request: web.Request) -> Any:
        content_type = request.headers.get("Content-Type")
        if content_type is None:
            raise ApiError(415, "missing_content_type", "A Content-Type header is missing.")
        if content_type.split(";")[0].strip() != "application/json":
            raise ApiError(
                415,
                "invalid_content_type",
                f"The Content-Type `{content_type}` is invalid. Accepted values for the "
                "Content-Type header are: `application/json`, `application/x-ndjson`, `text/csv`",
            )
        try:
            return json.loads(await request.text())
        except json.JSONDecodeError as exc:
            raise ApiError(
                400, "malformed_payload", f"The json payload provided is malformed. {exc}"
            ) from exc

    def _index(self, uid: str) -> _Index:
        index = self._indexes.get(uid)
        if index is None:
            raise ApiError(404, "index_not_found", f"Index `{uid}` not found.")
        return index

    def _enqueue(
        self, index_uid: str | None, type_: str, details: dict[str, Any], apply: Callable[[], None]
    ) -> web.Response:
        with self._lock:
            task = _Task(len(self._tasks), index_uid, type_, details, apply)
            self._tasks.append(task)
            self._process()
            return web.json_response(task.summary(), status=202)

    def _process(self) -> None:
        """Run enqueued tasks in order, unless paused. Caller holds the lock."""
        for task in self._tasks:
            if task.status not in ("enqueued", "processing"):
                continue
            if self._paused:
                task.status = "processing"
                task.started_at = task.started_at or _now()
                return
            task.started_at = task.started_at or _now()
            try:
                if self._fail_next:
                    code, message = self._fail_next.pop(0)
                    raise ApiError(500, code, message, "internal")
                task.apply()
                task.status = "succeeded"
            except ApiError as exc:
                task.status, task.error = "failed", exc.body()
            task.finished_at = _now()
