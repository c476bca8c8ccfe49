"""Matters as a runtime component: the wake handler for the Host's timers, and the worker.

The task agent's tools beyond its own come from the runtime (`tool_installers`): the action
tools reach the outbox through the actions ledger, which bot.matters may not import."""

from __future__ import annotations

from collections.abc import Sequence

from aiohttp import web

from bot.matters.service import TOPIC, WAKE_KIND, MatterService, wake_matter
from bot.matters.tools import MatterToolInstaller, matter_tools
from bot.matters.turn import MatterTurn
from bot.matters.waits import MatterWaitsWorker
from bot.matters.worker import MatterWorker
from bot.services import Services


class Matters:
    def __init__(self, tool_installers: Sequence[MatterToolInstaller] = ()) -> None:
        self.tools = matter_tools(tool_installers)

    def add_routes(self, app: web.Application) -> None:
        pass

    async def start(self, services: Services) -> None:
        services.timers.on(WAKE_KIND, wake_matter)
        if not services.runs_workers or services.model is None:
            return  # delegated work waits, durably, until a model is configured
        service = MatterService(
            services.db, services.notifier, cards=services.settings.progress_cards
        )
        turn = MatterTurn(
            services,
            service,
            services.model,
            self.tools,
            timeout=services.settings.matter_turn_timeout,
        )
        services.host.add(MatterWorker(services, turn, service))
        services.host.add(MatterWaitsWorker(services.db, services.notifier, TOPIC))

    async def stop(self) -> None:
        pass
