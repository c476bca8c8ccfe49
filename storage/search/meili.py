"""The Meilisearch backend, over the official (synchronous) client run in worker threads.

Writes are asynchronous tasks on the server; every write here waits for its tasks, so a
search after `upsert` returns sees the documents, and a task that fails or outlives
`task_timeout` raises. Waiting polls with `asyncio.sleep`, not the client's blocking
`wait_for_task`, so a slow server does not pin a worker thread per pending write.
"""

from __future__ import annotations

import asyncio
import math
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import meilisearch
from meilisearch.errors import (
    MeilisearchApiError,
    MeilisearchCommunicationError,
    MeilisearchTimeoutError,
)

from storage.search.base import SearchDocument, SearchFilters, SearchHit, effective_limit
from storage.search.errors import (
    SearchError,
    SearchRequestError,
    SearchTaskFailedError,
    SearchTimeoutError,
    SearchUnavailableError,
)
from storage.search.excerpts import excerpts
from storage.search.meili_documents import (
    PRIMARY_KEY,
    doc_key,
    hit_from_meili,
    to_meili_documents,
)
from storage.search.meili_query import (
    excerpt_from_formatted,
    filter_expression,
    keys_filter,
    meili_query_text,
    search_body,
)
from storage.search.meili_settings import desired_settings, needs_update
from storage.search.tokenizer import tokenize_query

T = TypeVar("T")

# Per add-documents request; the server's default payload limit is 100 MB.
_BATCH_MAX_BYTES = 8_000_000
_BATCH_MAX_DOCS = 1_000
# doc_key values per delete filter: keeps each filter string a few tens of KB.
_KEYS_PER_FILTER = 256
_POLL_FIRST = 0.005
_POLL_MAX = 0.25


class MeiliSearchIndex:
    def __init__(
        self,
        url: str,
        api_key: str | None,
        index_uid: str = "maka",
        task_timeout: float = 10.0,
        *,
        request_timeout: float = 10.0,
    ) -> None:
        self.url = url.rstrip("/")
        self.index_uid = index_uid
        self._api_key = api_key
        self._task_timeout = task_timeout
        # The client passes this to `requests`, typed as whole seconds.
        self._timeout_seconds = max(1, math.ceil(request_timeout))
        self._ready = False
        self._ready_lock = asyncio.Lock()
        self._closed = False

    # -- setup ----------------------------------------------------------------------------

    async def ensure_ready(self) -> None:
        """Create the index and apply our settings if the server does not have them yet.
        Safe to call repeatedly and from several processes; every operation calls it."""
        if self._ready:
            return
        async with self._ready_lock:
            if not self._ready:
                await self._ensure_index()
                await self._ensure_settings()
                self._ready = True

    async def _ensure_index(self) -> None:
        uid = self.index_uid
        try:
            info = await self._call(lambda c: c.get_raw_index(uid))
        except SearchRequestError as exc:
            if exc.code != "index_not_found":
                raise
            task = await self._call(lambda c: c.create_index(uid, {"primaryKey": PRIMARY_KEY}))
            try:
                await self._wait(task.task_uid, f"create index {uid}")
            except SearchTaskFailedError as failed:
                if failed.code != "index_already_exists":  # another process was faster
                    raise
            return
        primary_key = info.get("primaryKey")
        if primary_key not in (None, PRIMARY_KEY):
            raise SearchError(
                f"Meilisearch index {uid!r} has primary key {primary_key!r}, not "
                f"{PRIMARY_KEY!r}: it was made by something else; use another index uid"
            )

    async def _ensure_settings(self) -> None:
        uid = self.index_uid
        desired = desired_settings()
        current = await self._call(lambda c: c.index(uid).get_settings())
        if needs_update(current, desired):
            task = await self._call(lambda c: c.index(uid).update_settings(desired))
            await self._wait(task.task_uid, f"update settings of {uid}")

    # -- writes ---------------------------------------------------------------------------

    async def upsert(self, docs: Sequence[SearchDocument]) -> None:
        if not docs:
            return
        await self.ensure_ready()
        latest = {doc.id: doc for doc in docs}
        # Every chunk written now carries `rev`; afterwards, chunks of these documents with
        # another rev are leftovers of an older, longer version. Deleting them only after the
        # add succeeded means a failed upsert leaves the old version searchable.
        rev = uuid.uuid4().hex
        meili_docs = await asyncio.to_thread(_build_documents, list(latest.values()), rev)
        for batch in _batches(meili_docs):
            await self._add_batch(batch)
        await self._delete_by_keys([doc_key(i) for i in latest], not_rev=rev)

    async def _add_batch(self, batch: list[dict[str, Any]]) -> None:
        uid = self.index_uid
        task = await self._call(
            lambda c: c.index(uid).add_documents(batch, primary_key=PRIMARY_KEY)
        )
        await self._wait(task.task_uid, f"add {len(batch)} documents to {uid}")

    async def delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        await self.ensure_ready()
        await self._delete_by_keys([doc_key(i) for i in dict.fromkeys(ids)])

    async def _delete_by_keys(self, keys: list[str], not_rev: str | None = None) -> None:
        for start in range(0, len(keys), _KEYS_PER_FILTER):
            await self._delete_where(keys_filter(keys[start : start + _KEYS_PER_FILTER], not_rev))

    async def _delete_where(self, expr: str) -> None:
        uid = self.index_uid
        task = await self._call(lambda c: c.index(uid).delete_documents(filter=expr))
        await self._wait(task.task_uid, f"delete documents from {uid}")

    async def clear(self) -> None:
        await self.ensure_ready()
        uid = self.index_uid
        task = await self._call(lambda c: c.index(uid).delete_all_documents())
        await self._wait(task.task_uid, f"clear {uid}")

    async def drop_index(self) -> None:
        """Delete the whole index, settings included (tests, and starting over)."""
        uid = self.index_uid
        task = await self._call(lambda c: c.index(uid).delete())
        try:
            await self._wait(task.task_uid, f"delete index {uid}")
        except SearchTaskFailedError as exc:
            if exc.code != "index_not_found":
                raise
        self._ready = False

    # -- reads ----------------------------------------------------------------------------

    async def search(
        self, query: str, filters: SearchFilters | None = None, limit: int = 10
    ) -> list[SearchHit]:
        limit = effective_limit(limit)
        if limit == 0 or (filters is not None and filters.matches_nothing()):
            return []
        q = meili_query_text(query)
        if not q:
            # An empty q is Meilisearch's "placeholder search": every document.
            return []
        terms = filters.terms() if filters is not None else {}
        await self.ensure_ready()
        body = search_body(q, filter_expression(terms), limit)
        uid = self.index_uid
        response: dict[str, Any] = await self._call(lambda c: c.index(uid).search(q, body))
        return _hits(response, query)

    async def health(self) -> None:
        await self._call(lambda c: c.health())
        # /health needs no key; this also proves the key works and the index is usable.
        await self.ensure_ready()

    async def close(self) -> None:
        # Nothing to release: the client opens a connection per request.
        self._closed = True

    # -- plumbing -------------------------------------------------------------------------

    async def _call(self, fn: Callable[[meilisearch.Client], T]) -> T:
        if self._closed:
            raise SearchError("the Meilisearch index object is closed")
        return await asyncio.to_thread(self._call_sync, fn)

    def _call_sync(self, fn: Callable[[meilisearch.Client], T]) -> T:
        # A fresh client per call: the client mutates its shared headers dict on every
        # request (Content-Type), which is a race when several threads share one.
        client = meilisearch.Client(self.url, self._api_key, timeout=self._timeout_seconds)
        try:
            return fn(client)
        except MeilisearchApiError as exc:
            raise SearchRequestError(
                f"Meilisearch refused the request: {exc.message} ({exc.code})",
                code=exc.code,
                status=exc.status_code,
            ) from exc
        except (MeilisearchCommunicationError, MeilisearchTimeoutError) as exc:
            raise SearchUnavailableError(
                f"cannot reach Meilisearch at {self.url}: {exc.message}"
            ) from exc

    async def _wait(self, task_uid: int, what: str) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._task_timeout
        delay = _POLL_FIRST
        while True:
            task = await self._call(lambda c: c.get_task(task_uid))
            if task.status == "succeeded":
                return
            if task.status in ("failed", "canceled"):
                error = task.error or {}
                raise SearchTaskFailedError(
                    f"Meilisearch task {task_uid} ({what}) {task.status}: "
                    f"{error.get('message', 'no error message')}",
                    code=error.get("code"),
                    task_uid=task_uid,
                )
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise SearchTimeoutError(
                    f"Meilisearch task {task_uid} ({what}) still {task.status} after "
                    f"{self._task_timeout:g}s; it stays queued and may be applied later",
                    task_uid=task_uid,
                )
            await asyncio.sleep(min(delay, remaining))
            delay = min(delay * 2, _POLL_MAX)


def _build_documents(docs: list[SearchDocument], rev: str) -> list[dict[str, Any]]:
    return [chunk for doc in docs for chunk in to_meili_documents(doc, rev)]


def _batches(docs: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    size = 0
    for doc in docs:
        # UTF-8 CJK is 3 bytes a character; JSON escaping adds a little more.
        doc_size = 3 * (len(doc["text"]) + len(doc["tokens"]) + len(doc["title"])) + 512
        if batch and (size + doc_size > _BATCH_MAX_BYTES or len(batch) >= _BATCH_MAX_DOCS):
            yield batch
            batch, size = [], 0
        batch.append(doc)
        size += doc_size
    if batch:
        yield batch


def _hits(response: dict[str, Any], query: str) -> list[SearchHit]:
    hits: list[SearchHit] = []
    seen: set[str] = set()
    tokens: list[str] | None = None
    for raw in response.get("hits", []):
        src = raw.get("src") or {}
        doc_id = src.get("id")
        # distinctAttribute already keeps one chunk per document; this guards a server
        # where the setting has not been applied yet. Hits come best first.
        if doc_id is None or doc_id in seen:
            continue
        seen.add(doc_id)
        formatted = (raw.get("_formatted") or {}).get("text")
        if isinstance(formatted, str) and formatted:
            found = [excerpt_from_formatted(formatted)]
        else:
            tokens = tokens if tokens is not None else tokenize_query(query)
            found = excerpts(raw.get("text") or "", tokens, max_count=1)
        hits.append(hit_from_meili(raw, found))
    return hits
