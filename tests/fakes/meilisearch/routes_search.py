"""Route: search (parameter check, then the search engine under the lock)."""

from __future__ import annotations

from aiohttp import web

from .errors import ApiError
from .search import _SEARCH_PARAMS, _UNSUPPORTED_SEARCH_PARAMS, _run_search
from .store import _Store


class _SearchRoutes(_Store):
    async def _search(self, request: web.Request) -> web.Response:
        body = await self._json(request)
        if not isinstance(body, dict):
            raise ApiError(400, "bad_request", "The search body must be a JSON object.")
        for key in body:
            if key in _UNSUPPORTED_SEARCH_PARAMS:
                raise ApiError(400, "bad_request", f"The fake does not implement `{key}`.")
            if key not in _SEARCH_PARAMS:
                raise ApiError(400, "bad_request", f"Unknown field `{key}`")
        with self._lock:
            index = self._index(request.match_info["uid"])
            result = _run_search(index, body)
        return web.json_response(result)
