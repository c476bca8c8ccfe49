"""Routes: documents (add-or-replace, delete all / by ids / by filter, fetch, get) and
index stats."""

from __future__ import annotations

import copy
import json

from aiohttp import web

from .documents import _document_id, _resolve_primary_key, _select
from .errors import ApiError
from .filter_eval import matches
from .filter_parser import FilterError, parse_filter
from .filterable import _check_filterable
from .state import _Index, _now
from .store import _Store


class _DocumentRoutes(_Store):
    async def _add_documents(self, request: web.Request) -> web.Response:
        uid = request.match_info["uid"]
        body = await self._json(request)
        docs = body if isinstance(body, list) else [body]
        if not all(isinstance(d, dict) for d in docs):
            raise ApiError(400, "malformed_payload", "Documents must be JSON objects.")
        asked_key = request.query.get("primaryKey")

        def apply() -> None:
            index = self._indexes.setdefault(uid, _Index(uid, asked_key))
            key = _resolve_primary_key(index, asked_key, docs)
            prepared = {_document_id(doc, key): copy.deepcopy(doc) for doc in docs}
            index.primary_key = key
            index.documents.update(prepared)
            index.updated_at = _now()

        details = {"receivedDocuments": len(docs), "indexedDocuments": None}
        return self._enqueue(uid, "documentAdditionOrUpdate", details, apply)

    async def _delete_all(self, request: web.Request) -> web.Response:
        uid = request.match_info["uid"]

        def apply() -> None:
            self._index(uid).documents.clear()

        return self._enqueue(uid, "documentDeletion", {"deletedDocuments": None}, apply)

    async def _delete_batch(self, request: web.Request) -> web.Response:
        uid = request.match_info["uid"]
        ids = await self._json(request)
        if not isinstance(ids, list):
            raise ApiError(400, "bad_request", "Expected an array of document ids.")

        def apply() -> None:
            documents = self._index(uid).documents
            for doc_id in ids:
                documents.pop(str(doc_id), None)

        return self._enqueue(uid, "documentDeletion", {"providedIds": len(ids)}, apply)

    async def _delete_by_filter(self, request: web.Request) -> web.Response:
        uid = request.match_info["uid"]
        body = await self._json(request)
        if not isinstance(body, dict) or body.get("filter") in (None, "", []):
            raise ApiError(400, "missing_document_filter", "Missing field `filter`")
        try:
            tree = parse_filter(body["filter"])
        except FilterError as exc:
            raise ApiError(400, "invalid_document_filter", str(exc)) from exc

        def apply() -> None:
            index = self._index(uid)
            try:
                _check_filterable(index, tree)
            except FilterError as exc:
                raise ApiError(400, "invalid_document_filter", f"Index `{uid}`: {exc}") from exc
            doomed = [k for k, d in index.documents.items() if matches(tree, d)]
            for doc_id in doomed:
                del index.documents[doc_id]

        details = {"originalFilter": json.dumps(body["filter"]), "deletedDocuments": None}
        return self._enqueue(uid, "documentDeletion", details, apply)

    async def _fetch_documents(self, request: web.Request) -> web.Response:
        body = await self._json(request) or {}
        with self._lock:
            index = self._index(request.match_info["uid"])
            docs = list(index.documents.values())
            if body.get("filter") not in (None, "", []):
                try:
                    tree = parse_filter(body["filter"])
                    _check_filterable(index, tree)
                except FilterError as exc:
                    raise ApiError(400, "invalid_document_filter", str(exc)) from exc
                docs = [d for d in docs if matches(tree, d)]
            offset, limit = int(body.get("offset", 0)), int(body.get("limit", 20))
            fields = body.get("fields")
            page = [_select(d, fields or ["*"]) for d in docs[offset : offset + limit]]
        return web.json_response(
            {"results": page, "offset": offset, "limit": limit, "total": len(docs)}
        )

    async def _get_document(self, request: web.Request) -> web.Response:
        with self._lock:
            index = self._index(request.match_info["uid"])
            doc = index.documents.get(request.match_info["doc_id"])
            if doc is None:
                raise ApiError(
                    404,
                    "document_not_found",
                    f"Document `{request.match_info['doc_id']}` not found.",
                )
            return web.json_response(doc)

    async def _stats(self, request: web.Request) -> web.Response:
        with self._lock:
            index = self._index(request.match_info["uid"])
            distribution: dict[str, int] = {}
            for doc in index.documents.values():
                for key in doc:
                    distribution[key] = distribution.get(key, 0) + 1
            return web.json_response(
                {
                    "numberOfDocuments": len(index.documents),
                    "isIndexing": False,
                    "fieldDistribution": distribution,
                }
            )
