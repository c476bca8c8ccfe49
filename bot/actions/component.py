"""Actions as a runtime component: the scheduled-message timer's handler and the action
worker (its commands and tools are the Bot's: bot/assistant/component.py)."""

from __future__ import annotations

from aiohttp import web

from bot.actions.calendar import register_calendar_kinds
from bot.actions.mail import register_mail_kinds
from bot.actions.messages import TIMER_KIND, fire_scheduled, register_message_kinds
from bot.actions.worker import ActionWorker
from bot.actions.workspace import register_workspace_kinds
from bot.services import Services


class Actions:
    def add_routes(self, app: web.Application) -> None:
        pass

    async def start(self, services: Services) -> None:
        register_message_kinds()
        register_calendar_kinds()
        register_workspace_kinds()  # a worker-only process runs them too
        register_mail_kinds()
        services.timers.on(TIMER_KIND, fire_scheduled)
        if services.runs_workers:
            services.host.add(ActionWorker(services))

    async def stop(self) -> None:
        pass
