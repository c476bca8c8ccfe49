"""Sources as a runtime component: the sync worker, its schedule, and the worker that indexes
every source record for search (synced, or written by webhook ingest on any replica). It adds
nothing to web-only processes: ingest writes the records itself.

Schedule: one persisted timer per configured source kind (`sources.sync:feishu`,
`sources.sync:email`) fires every MAKA_SYNC_FEISHU_INTERVAL / MAKA_SYNC_EMAIL_INTERVAL
seconds, and `docs`/`tasks`/`chats` every MAKA_SYNC_OWNER_INTERVAL (0: only on request). Its handler
runs in the firing transaction and only asks for a
sync (marks the kind's source row wanted) and sets the next wake; the `source-sync` worker
claims requested sources by lease and does the work, so a source is synced by one process at
a time across replicas, and a request survives restarts.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from aiohttp import web
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from bot.config import Settings
from bot.host.timers import TOPIC as TIMERS_TOPIC
from bot.host.workers import Worker
from bot.memory.source_index import SourceIndexer, SourceIndexWorker
from bot.services import Services
from bot.sync.adapters import OWNER_KINDS, build_adapters, configured_kinds, not_configured
from bot.sync.counts import RecordCountsWorker
from sources.base import SourceAdapter
from sources.feishu.owner_units import CHANGED_TOPIC, WATCHED_UNITS
from sources.runner import SyncRunner
from storage.models import Timer
from storage.repos import sources as repo
from storage.repos import timers as timers_repo
from storage.types import utcnow

log = logging.getLogger(__name__)

SYNC_TOPIC = "sources"
TIMER_KIND = "sources.sync"
FIRST_SYNC_DELAY = timedelta(seconds=30)  # after the very first start: let start-up settle


def timer_key(kind: str) -> str:
    return f"{TIMER_KIND}:{kind}"


class SyncWorker(Worker):
    name = "source-sync"
    topics = (SYNC_TOPIC,)
    concurrency = 4  # sources synced at once (Feishu calls are paced across them)

    def __init__(self, runner: SyncRunner) -> None:
        self.runner = runner

    async def run_once(self) -> bool:
        return await self.runner.run_next()


class SourcesComponent:
    def __init__(self, settings: Settings | None = None) -> None:
        self._settings = settings  # default: the running app's
        self.indexer: SourceIndexer | None = None
        self.runner: SyncRunner | None = None
        self.adapters: dict[str, SourceAdapter] = {}
        self._services: Services | None = None

    def add_routes(self, app: web.Application) -> None:
        pass

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            assert self._services is not None, "start() first"
            return self._services.settings
        return self._settings

    def intervals(self) -> dict[str, float]:
        s = self.settings
        owner = s.sync_owner_interval  # the owner's documents, tasks, chats (read as the owner)
        return {
            "feishu": s.sync_feishu_interval,
            "email": s.sync_email_interval,
            "calendar": s.sync_calendar_interval,
            **{kind: owner for kind in OWNER_KINDS},
        }

    async def start(self, services: Services) -> None:
        self._services = services
        kinds = configured_kinds(self.settings)
        async with services.db.write() as tx:
            for kind in kinds:  # so status shows them before their first sync
                await repo.ensure(tx, name=kind, kind=kind, scope=None, title=None, now=utcnow())
        if not services.runs_workers:
            return
        self.adapters = build_adapters(
            self.settings, services.db, instance_id=services.host.instance_id
        )
        host = services.host

        async def wake() -> None:
            await services.notifier.notify(SYNC_TOPIC)

        async def changed(unit: str) -> None:
            if unit in WATCHED_UNITS:
                await services.notifier.notify(CHANGED_TOPIC)

        self.runner = SyncRunner(
            services.db,
            self.adapters,
            host.instance_id,
            on_wanted=wake,
            on_changed=changed,
            should_stop=lambda: host.stopping,
            not_configured=not_configured(self.settings),
        )
        host.add(SyncWorker(self.runner))
        self.indexer = SourceIndexer(services.db, services.search)
        host.add(SourceIndexWorker(services.db, self.indexer, host.instance_id))
        host.add(RecordCountsWorker(services.db))
        services.timers.on(TIMER_KIND, self._on_timer)
        await self._schedule(kinds)

    async def _schedule(self, kinds: list[str]) -> None:
        assert self._services is not None
        now = utcnow()
        for kind, interval in self.intervals().items():
            key = timer_key(kind)
            try:
                async with self._services.db.write() as tx:
                    timer = await timers_repo.get(tx, key)
                    pending = timer is not None and timer.state == timers_repo.PENDING
                    if kind not in kinds or interval <= 0:
                        if pending:
                            await timers_repo.cancel(tx, key)
                        continue
                    latest = now + timedelta(seconds=interval)
                    if pending and timer is not None and timer.due_at <= latest:
                        continue  # already scheduled (by us before a restart, or a replica)
                    first = now + min(FIRST_SYNC_DELAY, timedelta(seconds=interval))
                    due = first if timer is None else latest
                    await timers_repo.schedule(
                        tx, kind=TIMER_KIND, key=key, due_at=due, payload={"kind": kind}
                    )
            except IntegrityError:  # another replica scheduled it at the same moment
                continue
        await self._services.notifier.notify(TIMERS_TOPIC)

    async def _on_timer(self, tx: AsyncSession, timer: Timer) -> None:
        """In the firing transaction: ask for the sync, set the next wake. Nothing slow."""
        assert self._services is not None
        kind = str((timer.payload or {}).get("kind", ""))
        interval = self.intervals().get(kind, 0.0)
        if kind not in configured_kinds(self.settings) or interval <= 0:
            return  # configured away since it was set: it ends here
        now = utcnow()
        await repo.ensure(tx, name=kind, kind=kind, scope=None, title=None, now=now)
        await repo.request_sync(tx, [kind], now, {"by": "schedule"})
        await timers_repo.schedule(
            tx,
            kind=TIMER_KIND,
            key=timer_key(kind),
            due_at=now + timedelta(seconds=interval),
            payload={"kind": kind},
        )
        await self._services.notifier.publish(tx, SYNC_TOPIC)

    async def stop(self) -> None:
        if self.runner is not None:
            try:
                released = await self.runner.release()
                if released:
                    log.info("released %d source leases", released)
            except Exception as exc:  # they lapse by themselves
                log.warning("could not release source leases: %s", exc)
        for adapter in self.adapters.values():
            await adapter.aclose()
        if self.indexer is not None:
            await self.indexer.close()
