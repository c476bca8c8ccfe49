"""The OAuth callback Feishu sends the owner's browser to: a GET with `code` and `state`,
answered with a small page. The state is the request's only credential (no cookie, no admin
login: it is the owner's browser on their phone or laptop). The page never repeats the code
or a token, and tells the browser to keep it out of caches and referrers (the address holds
the code)."""

from __future__ import annotations

import html

from aiohttp import web

from bot.owner.signin import complete
from bot.services import Services

HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": "default-src 'none'",
    "X-Content-Type-Options": "nosniff",
}
PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Maka sign-in</title></head>
<body><p>{line}</p></body></html>
"""


def page(line: str, status: int) -> web.Response:
    return web.Response(
        text=PAGE.format(line=html.escape(line, quote=False)),
        status=status,
        content_type="text/html",
        headers=HEADERS,
    )


async def callback(services: Services | None, request: web.Request) -> web.Response:
    if services is None:
        return page("The assistant is starting. Try again in a moment.", 503)
    if "error" in request.query:  # the owner declined on Feishu's page
        return page("Sign-in was cancelled. Nothing was stored.", 400)
    outcome = await complete(
        services.settings,
        services.db,
        services.notifier,
        code=request.query.get("code", ""),
        state=request.query.get("state", ""),
    )
    return page(outcome.page, 200 if outcome.ok else 400)
