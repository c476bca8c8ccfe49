"""`/status`, `/status.json` and `/status/login`, behind the admin guard (bot/web/guard.py):
on loopback they answer as they are; off loopback only with MAKA_ADMIN_TOKEN, given as a
bearer token or through the login form, which sets a cookie."""

from __future__ import annotations

from aiohttp import web

from bot.config import Settings
from bot.services import Services
from bot.web.guard import AdminGuard
from bot.web.status.page import login_page, render
from bot.web.status.report import build_report

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; "
    "frame-ancestors 'none'"
)
NO_TOKEN = "The status page is served off loopback only with MAKA_ADMIN_TOKEN set."


class StatusPage:
    """A runtime component: routes at build time, the services once they start."""

    def __init__(self, settings: Settings) -> None:
        self.guard = AdminGuard(settings)
        self._services: Services | None = None

    @property
    def services(self) -> Services:
        if self._services is None:
            raise web.HTTPServiceUnavailable(text="starting")
        return self._services

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/status", self._page)
        app.router.add_get("/status.json", self._json)
        app.router.add_post("/status/login", self._login)

    async def start(self, services: Services) -> None:
        self._services = services

    async def stop(self) -> None:
        self._services = None

    def _admit(self, request: web.Request) -> None:
        if self.guard.open_to_anyone:
            raise web.HTTPForbidden(text=NO_TOKEN)
        self.guard.check_host(request)
        self.guard.check_same_origin(request)
        self.guard.check_login(request)

    async def _page(self, request: web.Request) -> web.Response:
        try:
            self._admit(request)
        except web.HTTPUnauthorized:
            return _html(login_page("Log in to see the status."), status=401)
        report = await build_report(self.services)
        return _html(render(report))

    async def _json(self, request: web.Request) -> web.Response:
        self._admit(request)
        report = await build_report(self.services)
        body = report.model_dump_json()
        return web.Response(text=body, content_type="application/json",
                            headers={"Cache-Control": "no-store"})  # fmt: skip

    async def _login(self, request: web.Request) -> web.Response:
        if self.guard.open_to_anyone:
            raise web.HTTPForbidden(text=NO_TOKEN)
        self.guard.check_host(request)
        self.guard.check_same_origin(request)
        token = await _form_token(request)
        if not self.guard.needs_login:
            raise web.HTTPSeeOther("/status")
        try:
            matches = self.guard.token_matches(request, token)
        except web.HTTPTooManyRequests as refused:
            page = login_page(f"{(refused.text or '').capitalize()}.")
            return _html(
                page, status=refused.status, headers={"Retry-After": refused.headers["Retry-After"]}
            )
        if not matches:
            return _html(login_page("That is not the admin token."), status=401)
        response = web.HTTPSeeOther("/status")
        self.guard.set_login_cookie(request, response, path="/")
        raise response


async def _form_token(request: web.Request) -> str:
    """The login form's token; a body no form could send is a 400 (413 when too large)."""
    try:
        form = await request.post()
    except web.HTTPException:
        raise
    except (ValueError, UnicodeDecodeError, AssertionError):
        raise web.HTTPBadRequest(text="send the login form (token=...)") from None
    token = form.get("token", "")
    return token if isinstance(token, str) else ""


def _html(text: str, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        text=text, status=status, content_type="text/html",
        headers={**(headers or {}), "Content-Security-Policy": CSP, "Cache-Control": "no-store"},
    )  # fmt: skip
