"""Routes: server (health, version), indexes and settings."""

from __future__ import annotations

import copy
import re

from aiohttp import web

from .errors import ApiError
from .settings import _DEFAULT_SETTINGS, _MERGED_SETTINGS, _validate_setting
from .state import _Index, _now
from .store import _Store

_INDEX_UID_RE = re.compile(r"[A-Za-z0-9_-]{1,400}")


class _IndexRoutes(_Store):
    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "available"})

    async def _version(self, request: web.Request) -> web.Response:
        return web.json_response(
            {"commitSha": "fake", "commitDate": "2025-01-01T00:00:00Z", "pkgVersion": "1.16.0"}
        )

    async def _list_indexes(self, request: web.Request) -> web.Response:
        with self._lock:
            results = [i.info() for i in self._indexes.values()]
        return web.json_response(
            {"results": results, "offset": 0, "limit": 20, "total": len(results)}
        )

    async def _create_index(self, request: web.Request) -> web.Response:
        body = await self._json(request)
        uid, primary_key = body.get("uid"), body.get("primaryKey")
        if not isinstance(uid, str) or not _INDEX_UID_RE.fullmatch(uid):
            raise ApiError(400, "invalid_index_uid", f"`{uid}` is not a valid index uid.")

        def apply() -> None:
            if uid in self._indexes:
                raise ApiError(400, "index_already_exists", f"Index `{uid}` already exists.")
            self._indexes[uid] = _Index(uid, primary_key)

        return self._enqueue(uid, "indexCreation", {"primaryKey": primary_key}, apply)

    async def _get_index(self, request: web.Request) -> web.Response:
        with self._lock:
            return web.json_response(self._index(request.match_info["uid"]).info())

    async def _delete_index(self, request: web.Request) -> web.Response:
        uid = request.match_info["uid"]

        def apply() -> None:
            self._index(uid)
            del self._indexes[uid]

        return self._enqueue(uid, "indexDeletion", {"deletedDocuments": None}, apply)

    async def _get_settings(self, request: web.Request) -> web.Response:
        with self._lock:
            return web.json_response(copy.deepcopy(self._index(request.match_info["uid"]).settings))

    async def _patch_settings(self, request: web.Request) -> web.Response:
        uid = request.match_info["uid"]
        body = await self._json(request)
        if not isinstance(body, dict):
            raise ApiError(400, "bad_request", "Settings must be a JSON object.")
        changes = {key: _validate_setting(key, value) for key, value in body.items()}

        def apply() -> None:
            index = self._indexes.setdefault(uid, _Index(uid, None))
            for key, value in changes.items():
                if value is None:
                    index.settings[key] = copy.deepcopy(_DEFAULT_SETTINGS[key])
                elif key in _MERGED_SETTINGS:
                    index.settings[key] = {**index.settings[key], **value}
                else:
                    index.settings[key] = value
            index.updated_at = _now()

        return self._enqueue(uid, "settingsUpdate", body, apply)
