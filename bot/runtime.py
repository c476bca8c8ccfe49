"""The application factory: one aiohttp app whose cleanup context starts and stops every
service in order (database, schema, notifier, channels, Host), for any role.

Roles: `web` receives (webhook, long connection) and serves health, running no workers;
`worker` runs the workers and serves health only; `all` does both (the embedded default and
a single replica).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Protocol

from aiohttp import web

from bot.attachments.extract import OCR_OFF_LINE, ocr_available
from bot.attachments.worker import ExtractionWorker
from bot.channels.ingest import Ingest
from bot.config import Role, Settings
from bot.host.notify import create_notifier
from bot.host.retention import Pruner, RetentionPolicy, RetentionWorker
from bot.host.timers import Timers, TimerWorker
from bot.host.workers import Host
from bot.llm.client import ModelClient, ModelProvider
from bot.llm.factory import ModelRoster, build_roster
from bot.llm.recording import DatabaseRecorder
from bot.llm.roles import ModelRole
from bot.memory.search import SearchService, open_index
from bot.memory.session_index import SessionIndexer, SessionIndexWorker
from bot.services import Services
from bot.web.bad_requests import log_bad_requests_in_one_line
from bot.web.health import ReadinessCheck, add_health_routes
from bot.web.login_limits import LOGIN_LIMITS, LoginLimits
from bot.web.outage import answer_outages
from bot.workhub.recall import Recall
from bot.workhub.service import WorkHub
from bot.workhub.summaries import SummaryWorker
from storage.db import create_database
from storage.migrate import prepare_schema
from storage.search.tokenizer import warm_up

log = logging.getLogger(__name__)

SERVICES = web.AppKey("services", Services)
COMPONENTS = web.AppKey("components", list["Component"])


class Component(Protocol):
    """A part of the process with HTTP routes (fixed before start) and a lifecycle."""

    def add_routes(self, app: web.Application) -> None: ...
    async def start(self, services: Services) -> None: ...
    async def stop(self) -> None: ...


def components_for(settings: Settings, role: Role, bot: Component | None = None) -> list[Component]:
    from bot.actions.component import Actions
    from bot.actions.toolsets import install_task_action_tools
    from bot.assistant.component import Assistant
    from bot.discovery.component import Discovery
    from bot.forget.worker import Forgetting
    from bot.matters.component import Matters
    from bot.memory.indexes.component import MemoryIndexes
    from bot.owner.component import OwnerSignIn
    from bot.sync.component import SourcesComponent

    components: list[Component] = [
        bot or Assistant(),
        Matters([install_task_action_tools]),
        SourcesComponent(),
        MemoryIndexes(),
        Discovery(),
        Forgetting(),
        OwnerSignIn(role),
        Actions(),
    ]
    if role is not Role.WORKER:
        from bot.web.status.routes import StatusPage

        components.append(StatusPage(settings))
    if settings.feishu_configured:
        from bot.channels.feishu.channel import FeishuChannel

        components.append(FeishuChannel(settings, role))
    if settings.console_enabled and role is not Role.WORKER:
        from bot.channels.console.channel import ConsoleChannel

        components.append(ConsoleChannel(settings))
    return components


def create_app(
    settings: Settings,
    role: Role = Role.ALL,
    extra: list[Component] | None = None,
    *,
    bot: Component | None = None,
    model_provider: ModelProvider | None = None,
) -> web.Application:
    """`bot` replaces the Bot (channel tests use a stand-in); `model_provider` replaces the
    configured model (tests use a scripted one)."""
    app = web.Application()
    log_bad_requests_in_one_line()
    app.middlewares.append(answer_outages(lambda: app[SERVICES].db if SERVICES in app else None))
    app[LOGIN_LIMITS] = LoginLimits()  # one limit for every admin login (bot/web/guard.py)
    checks: dict[str, ReadinessCheck] = {}
    add_health_routes(app, checks)
    components = components_for(settings, role, bot) + list(extra or [])
    for component in components:
        component.add_routes(app)
    app[COMPONENTS] = components

    async def services_ctx(app: web.Application) -> AsyncIterator[None]:
        db = create_database(settings.resolved_database_url)
        try:
            await db.reach()  # a start-up failure is one line, DatabaseNotReady
            await prepare_schema(db)
            notifier = create_notifier(db)
            await notifier.start()
            host = Host(db, notifier, poll_interval=settings.poll_interval)
            recorder = DatabaseRecorder(db)
            roster = (
                ModelRoster.single(ModelClient(model_provider, recorder))
                if model_provider is not None
                else build_roster(settings, recorder)
            )
            model = roster.main
            search = SearchService(open_index(settings))
            session_index = SessionIndexer(db, search, tool_output=settings.index_tool_output)
            services = Services(
                settings=settings,
                role=role,
                db=db,
                notifier=notifier,
                host=host,
                timers=Timers(db, notifier),
                ingest=Ingest(db, notifier, max_event_age=settings.max_event_age),
                model=model,
                models=roster.by_role,
                search=search,
                session_index=session_index,
                workhub=WorkHub(
                    db,
                    notifier,
                    search,
                    tz=settings.tz,
                    strategy=settings.workhub_evidence,
                    recaller=Recall(
                        settings.workhub_recall, roster.clients[ModelRole.ROUTER], settings.tz
                    ),
                ),
                readiness=checks,
            )
            if services.runs_workers:
                host.add(TimerWorker(services.timers, host.instance_id))
                host.add(SessionIndexWorker(db, session_index, host.instance_id))
                host.add(ExtractionWorker(db, notifier, host.instance_id))
                policy = RetentionPolicy.from_settings(settings)
                host.add(RetentionWorker(Pruner(db, policy, host.instance_id)))
                if (summarizer := services.model_for(ModelRole.SUMMARY)) is not None:
                    host.add(
                        SummaryWorker(
                            db,
                            summarizer,
                            search,
                            host.instance_id,
                            archive_after=settings.task_archive_age,
                        )
                    )
            _add_core_checks(services)
            for component in components:
                await component.start(services)
            app[SERVICES] = services
            # jieba takes ~0.6 s to load: do it now, off the loop, not on the first message
            warm = asyncio.create_task(asyncio.to_thread(warm_up), name="tokenizer-warm-up")
            await host.start()
            log.info("maka started: role=%s instance=%s db=%s", role, host.instance_id, db.dialect)
            if not await asyncio.to_thread(ocr_available):  # asks tesseract once, off the loop
                log.warning(OCR_OFF_LINE)
            yield
            await warm
            await host.stop(settings.shutdown_grace)
            for component in reversed(components):
                await component.stop()
            await services.ingest.close()
            await notifier.close()
            await search.close()
            await roster.aclose()
        finally:
            await db.dispose()

    app.cleanup_ctx.append(services_ctx)
    return app


def _add_core_checks(services: Services) -> None:
    async def database_ready() -> str | None:
        await services.db.ping()
        return None

    async def workers_ready() -> str | None:
        host = services.host
        if host.healthy:
            return None
        down = [name for name, state in host.status().items() if not state.alive]
        return "stopping" if host.stopping else f"workers not running: {down}"

    services.readiness["database"] = database_ready
    services.readiness["workers"] = workers_ready
