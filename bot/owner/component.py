"""Sign-in as the owner as a runtime component: the OAuth callback route where Feishu can
reach it (the web role), and the refresh worker where workers run."""

from __future__ import annotations

from aiohttp import web

from bot.config import Role
from bot.owner.signin import CALLBACK_PATH
from bot.owner.tokens import refresher
from bot.owner.web import callback
from bot.owner.worker import TokenRefreshWorker
from bot.services import Services


class OwnerSignIn:
    def __init__(self, role: Role) -> None:
        self.role = role
        self._services: Services | None = None

    def add_routes(self, app: web.Application) -> None:
        if self.role is not Role.WORKER:
            app.router.add_get(CALLBACK_PATH, self._callback)

    async def _callback(self, request: web.Request) -> web.Response:
        return await callback(self._services, request)

    async def start(self, services: Services) -> None:
        self._services = services
        if services.runs_workers:
            services.host.add(TokenRefreshWorker(refresher(services)))

    async def stop(self) -> None:
        self._services = None
