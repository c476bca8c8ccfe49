"""The application factory: one aiohttp app whose cleanup context starts and stops every
service in order (database, schema, notifier, Host), for any role.

Roles: `web` serves webhooks and health and runs no workers; `worker` runs the workers and
serves health only; `all` does both (the embedded default and a single replica).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

from aiohttp import web

from bot.config import Role, Settings
from bot.host.notify import Notifier, create_notifier
from bot.host.timers import Timers, TimerWorker
from bot.host.workers import Host
from bot.llm.client import ModelClient
from bot.llm.factory import build_model_client
from bot.llm.recording import DatabaseRecorder
from bot.web.health import ReadinessCheck, add_health_routes
from storage.db import Database, create_database
from storage.migrate import current_revision, head_revision, migrate

log = logging.getLogger(__name__)


class SchemaOutOfDate(RuntimeError):
    pass


@dataclass
class Services:
    settings: Settings
    role: Role
    db: Database
    notifier: Notifier
    host: Host
    timers: Timers
    model: ModelClient | None

    @property
    def runs_workers(self) -> bool:
        return self.role in (Role.WORKER, Role.ALL)


SERVICES = web.AppKey("services", Services)


async def prepare_schema(db: Database) -> None:
    """SQLite (one process) migrates itself; PostgreSQL is migrated by `maka migrate` (the
    Helm hook), so replicas never race each other through a migration."""
    if db.is_sqlite:
        await migrate(db)
        return
    current, head = await current_revision(db), head_revision()
    if current != head:
        raise SchemaOutOfDate(
            f"database schema is at {current or 'empty'}, this version needs {head}: "
            "run `maka migrate`"
        )


def create_app(settings: Settings, role: Role = Role.ALL) -> web.Application:
    app = web.Application()
    checks: dict[str, ReadinessCheck] = {}
    add_health_routes(app, checks)

    async def services_ctx(app: web.Application) -> AsyncIterator[None]:
        db = create_database(settings.resolved_database_url)
        try:
            await prepare_schema(db)
            notifier = create_notifier(db)
            await notifier.start()
            host = Host(db, notifier, poll_interval=settings.poll_interval)
            timers = Timers(db, notifier)
            model = build_model_client(
                settings.model_base_url,
                settings.model_api_key,
                settings.model_name,
                DatabaseRecorder(db),
                timeout=settings.model_timeout,
            )
            services = Services(settings, role, db, notifier, host, timers, model)
            if services.runs_workers:
                host.add(TimerWorker(timers, host.instance_id))
            app[SERVICES] = services

            async def database_ready() -> str | None:
                await db.ping()
                return None

            async def workers_ready() -> str | None:
                if host.healthy:
                    return None
                down = [n for n, s in host.status().items() if not s.alive]
                return "stopping" if host.stopping else f"workers not running: {down}"

            checks["database"] = database_ready
            checks["workers"] = workers_ready
            await host.start()
            log.info("maka started: role=%s instance=%s db=%s", role, host.instance_id, db.dialect)
            yield
            await host.stop(settings.shutdown_grace)
            await notifier.close()
            if model is not None:
                await model.aclose()
        finally:
            await db.dispose()

    app.cleanup_ctx.append(services_ctx)
    return app
