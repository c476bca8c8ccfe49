"""Routes: tasks (get one, list with filters and paging)."""

from __future__ import annotations

from aiohttp import web

from .errors import ApiError
from .store import _Store


class _TaskRoutes(_Store):
    async def _get_task(self, request: web.Request) -> web.Response:
        task_uid = int(request.match_info["task_uid"])
        with self._lock:
            if not 0 <= task_uid < len(self._tasks):
                raise ApiError(404, "task_not_found", f"Task `{task_uid}` not found.")
            return web.json_response(self._tasks[task_uid].view())

    async def _list_tasks(self, request: web.Request) -> web.Response:
        def values(name: str) -> set[str] | None:
            raw = request.query.get(name)
            return set(raw.split(",")) if raw else None

        uids, types, statuses = values("indexUids"), values("types"), values("statuses")
        limit = int(request.query.get("limit", 20))
        with self._lock:
            found = [
                t.view()
                for t in reversed(self._tasks)
                if (uids is None or t.index_uid in uids)
                and (types is None or t.type in types)
                and (statuses is None or t.status in statuses)
            ]
        page = found[:limit]
        return web.json_response(
            {
                "results": page,
                "total": len(found),
                "limit": limit,
                "from": page[0]["uid"] if page else None,
                "next": found[limit]["uid"] if len(found) > limit else None,
            }
        )
