"""Memory indexes as a runtime component: the maintenance worker, when a model is set."""

from __future__ import annotations

from aiohttp import web

from bot.llm.roles import ModelRole
from bot.memory.indexes.commands import index_service
from bot.memory.indexes.maintenance import IndexMaintenanceWorker
from bot.memory.indexes.tools import indexer_tools
from bot.memory.indexes.turn import IndexerTurn
from bot.services import Services


class MemoryIndexes:
    def add_routes(self, app: web.Application) -> None:
        pass

    async def start(self, services: Services) -> None:
        model = services.model_for(ModelRole.INDEXER)
        if not services.runs_workers or model is None:
            return  # indexes wait, durably, until a model is configured
        turn = IndexerTurn(model, indexer_tools(), timeout=services.settings.index_turn_timeout)
        services.host.add(
            IndexMaintenanceWorker(
                services.db,
                index_service(services),
                turn,
                owner=services.host.instance_id,
                tz=services.settings.tz,
            )
        )

    async def stop(self) -> None:
        pass
