"""FakeMeilisearch: the aiohttp server in its own thread, request log, auth, route table."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from aiohttp import web

from .errors import ApiError
from .routes_documents import _DocumentRoutes
from .routes_indexes import _IndexRoutes
from .routes_search import _SearchRoutes
from .routes_tasks import _TaskRoutes


class FakeMeilisearch(_IndexRoutes, _DocumentRoutes, _TaskRoutes, _SearchRoutes):
    """`with FakeMeilisearch(master_key="k") as fake: MeiliSearchIndex(fake.url, "k")`."""

    def __init__(self, master_key: str | None = None) -> None:
        super().__init__()
        self.master_key = master_key
        self.url = ""
        self.requests: list[tuple[str, str]] = []  # (method, path), for assertions
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()

    # -- lifecycle ------------------------------------------------------------------------

    def __enter__(self) -> FakeMeilisearch:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._serve, name="fake-meilisearch", daemon=True)
        self._thread.start()
        if not self._started.wait(10):
            raise RuntimeError("fake Meilisearch did not start")

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    def _serve(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        app = web.Application(middlewares=[self._middleware], client_max_size=100 * 1024**2)
        self._routes(app)
        runner = web.AppRunner(app)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(site.start())
        host, port = runner.addresses[0][:2]
        self.url = f"http://{host}:{port}"
        self._started.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(runner.cleanup())
            loop.close()

    # -- HTTP plumbing --------------------------------------------------------------------

    @web.middleware
    async def _middleware(
        self, request: web.Request, handler: Callable[[web.Request], Any]
    ) -> web.StreamResponse:
        self.requests.append((request.method, request.path))
        try:
            self._check_auth(request)
            response: web.StreamResponse = await handler(request)
            return response
        except ApiError as exc:
            return web.json_response(exc.body(), status=exc.status)

    def _check_auth(self, request: web.Request) -> None:
        if self.master_key is None or request.path == "/health":
            return
        header = request.headers.get("Authorization")
        if not header:
            raise ApiError(
                401,
                "missing_authorization_header",
                "The Authorization header is missing. It must use the bearer authorization method.",
                "auth",
            )
        scheme, _, key = header.partition(" ")
        if scheme != "Bearer" or key != self.master_key:
            raise ApiError(403, "invalid_api_key", "The provided API key is invalid.", "auth")

    def _routes(self, app: web.Application) -> None:
        r = app.router
        r.add_get("/health", self._health)
        r.add_get("/version", self._version)
        r.add_get("/indexes", self._list_indexes)
        r.add_post("/indexes", self._create_index)
        r.add_get("/indexes/{uid}", self._get_index)
        r.add_delete("/indexes/{uid}", self._delete_index)
        r.add_get("/indexes/{uid}/settings", self._get_settings)
        r.add_patch("/indexes/{uid}/settings", self._patch_settings)
        r.add_post("/indexes/{uid}/documents", self._add_documents)
        r.add_delete("/indexes/{uid}/documents", self._delete_all)
        r.add_post("/indexes/{uid}/documents/delete-batch", self._delete_batch)
        r.add_post("/indexes/{uid}/documents/delete", self._delete_by_filter)
        r.add_post("/indexes/{uid}/documents/fetch", self._fetch_documents)
        r.add_get("/indexes/{uid}/documents/{doc_id}", self._get_document)
        r.add_get("/indexes/{uid}/stats", self._stats)
        r.add_post("/indexes/{uid}/search", self._search)
        r.add_get("/tasks", self._list_tasks)
        r.add_get("/tasks/{task_uid}", self._get_task)
