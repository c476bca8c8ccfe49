"""Discovery as a runtime component: the heartbeat worker, when a model is set (without one
the heartbeat has nothing to run; `/discovery status` still answers)."""

from __future__ import annotations

from datetime import timedelta

from aiohttp import web

from bot.assistant.visibility import Visibility
from bot.discovery.commands import defaults_of
from bot.discovery.heartbeat import DiscoveryWorker
from bot.discovery.passes import DISCOVERY_PROMPT, JUDGEMENT_PROMPT, Pass
from bot.discovery.rounds import RoundRunner
from bot.discovery.tools import discovery_tools, judgement_tools
from bot.llm.roles import ModelRole
from bot.memory import recall
from bot.services import Services

OWNER_VIEW = Visibility(everything=True, conversation_id=None)


def round_runner(services: Services) -> RoundRunner:
    model = services.model_for(ModelRole.DISCOVERY)
    assert model is not None
    settings = services.settings
    timeout = settings.discovery_turn_timeout
    access = recall.MemoryAccess(
        services.db, services.search, OWNER_VIEW, settings.tz, settings.index_tool_output
    )
    return RoundRunner(
        services.db,
        services.notifier,
        access,
        Pass(model, discovery_tools(), purpose="discovery_turn",
             system=DISCOVERY_PROMPT, timeout=timeout),
        Pass(model, judgement_tools(), purpose="judgement_turn",
             system=JUDGEMENT_PROMPT, timeout=timeout),
        owner=settings.owner,
        tz=settings.tz,
    )  # fmt: skip


class Discovery:
    def add_routes(self, app: web.Application) -> None:
        pass

    async def start(self, services: Services) -> None:
        if not services.runs_workers or services.model_for(ModelRole.DISCOVERY) is None:
            return
        timeout = services.settings.discovery_turn_timeout
        services.host.add(
            DiscoveryWorker(
                services.db,
                round_runner(services),
                defaults_of(services),
                owner=services.host.instance_id,
                tz=services.settings.tz,
                lease=timedelta(seconds=2 * timeout + 60),
            )
        )

    async def stop(self) -> None:
        pass
