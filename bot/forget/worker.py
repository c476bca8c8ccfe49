"""The worker that carries out forget requests, and its runtime component."""

from __future__ import annotations

from aiohttp import web

from bot.forget.batch import LEASE, run_claimed
from bot.host.notify import Notifier
from bot.host.workers import Worker
from bot.services import Services
from storage.db import Database
from storage.repos import forgets
from storage.types import utcnow

TOPIC = "forget"  # notified when a request is stored, so a worker takes it now


class ForgetWorker(Worker):
    name = "forget"
    topics = (TOPIC,)

    def __init__(self, db: Database, owner: str, notifier: Notifier | None = None) -> None:
        self.db = db
        self.owner = owner
        self.notifier = notifier

    async def run_once(self) -> bool:
        async with self.db.write() as tx:
            request = await forgets.claim_due(tx, owner=self.owner, now=utcnow(), lease=LEASE)
        if request is None:
            return False
        await run_claimed(self.db, request, self.owner, self.notifier)
        return True


class Forgetting:
    """Runs the ForgetWorker where workers run."""

    def add_routes(self, app: web.Application) -> None:
        pass

    async def start(self, services: Services) -> None:
        if services.runs_workers:
            services.host.add(
                ForgetWorker(services.db, services.host.instance_id, services.notifier)
            )

    async def stop(self) -> None:
        pass
