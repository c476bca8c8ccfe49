"""Every request is answered in bounded time, and a database outage is a 503 that says so.

A handler that fails is asked about: if the database does not answer a ping within a few
seconds, the failure was the outage, and the answer is 503 naming it (an HTML page for a
browser, JSON for anything else) with Retry-After; a handler that takes longer than
REQUEST_DEADLINE (a database that accepts connections and never answers) is stopped and
answered the same way. A failure while the database answers is a bug of ours and stays a 500,
logged with its traceback. The webhook answers its own failures (503 when it cannot store);
`/readyz` reports the database as a readiness check.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from html import escape

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from storage.db import Database, lost_connection

log = logging.getLogger(__name__)

REQUEST_DEADLINE = 10.0  # seconds; the status page takes tens of milliseconds
PING_DEADLINE = 3.0  # seconds the database gets to answer `SELECT 1` after a failure
RETRY_AFTER = "10"
UNREACHABLE = "the database is unreachable"

DatabaseOf = Callable[[], Database | None]  # None before start-up and after shut-down

PAGE = """<!doctype html><meta charset="utf-8"><title>Maka: {title}</title>
<link rel="icon" href="data:,">
<h1>Maka: {title}</h1>
<p>{detail}</p>
<p>Nothing is lost: Feishu delivers what arrives meanwhile again, and the workers carry on
when the database is back. Check the database server and MAKA_DATABASE_URL
(<code>maka doctor</code>); this page answers again by itself.</p>"""


def answer_outages(database: DatabaseOf, *, deadline: float | None = None) -> Middleware:
    limit = deadline or REQUEST_DEADLINE

    @web.middleware
    async def outages(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            async with asyncio.timeout(limit):
                return await handler(request)
        except web.HTTPException:
            raise
        except Exception as exc:
            db = database()
            problem = (await db.problem(PING_DEADLINE) if db else None) or lost_connection(exc)
            if problem is None and not isinstance(exc, TimeoutError):
                raise  # the database answers: a bug of ours, logged by aiohttp as a 500
            title = UNREACHABLE if problem else f"no answer within {limit:g} s"
            detail = problem or "the request took too long"
            log.warning("%s %s answered 503, %s: %s", request.method, request.path, title, detail)
            return unavailable(request, title, detail)

    return outages


def unavailable(request: web.Request, title: str, detail: str) -> web.Response:
    headers = {"Retry-After": RETRY_AFTER, "Cache-Control": "no-store"}
    if "text/html" in request.headers.get("Accept", ""):
        page = PAGE.format(
            title=escape(title), detail=escape(f"{title[0].upper()}{title[1:]}: {detail}.")
        )
        return web.Response(text=page, status=503, content_type="text/html", headers=headers)
    body = json.dumps({"error": title, "detail": detail})
    return web.Response(text=body, status=503, content_type="application/json", headers=headers)
