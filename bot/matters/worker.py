"""Scheduling Matters: at most MAKA_MATTERS_CONCURRENCY turns at once in this process; a
due wake (a persisted Host timer) or new input makes a Matter runnable; a Matter found
mid-turn after a restart is paused and reported, not blindly re-run."""

from __future__ import annotations

import logging
from datetime import timedelta

from bot.host.workers import Worker
from bot.matters.service import TOPIC, MatterService
from bot.matters.turn import MatterTurn
from bot.services import Services
from storage.models import Matter
from storage.repos import matters as repo
from storage.types import utcnow

log = logging.getLogger(__name__)
INTERRUPTED = "interrupted by a restart mid-turn; resume it with /matters resume"


class MatterWorker(Worker):
    name = "matters"
    topics = (TOPIC, "session_inbox")

    def __init__(self, services: Services, turn: MatterTurn, matters: MatterService) -> None:
        self.services, self.turn, self.matters = services, turn, matters
        self.concurrency = services.settings.matters_concurrency
        self.lease = timedelta(seconds=turn.timeout + 60)

    @property
    def owner(self) -> str:
        return self.services.host.instance_id

    async def run_once(self) -> bool:
        db = self.services.db
        adopted = await self._adopt()
        async with db.read() as tx:
            if not await repo.has_runnable(tx, utcnow()):
                return adopted
        async with db.write() as tx:
            matter = await repo.claim_runnable(tx, owner=self.owner, now=utcnow(), lease=self.lease)
            if matter is None:
                return adopted
            interrupted = matter.running_since is not None
            if not interrupted:
                matter.running_since = utcnow()
                matter.run_count += 1
        if interrupted:
            log.warning("matter %s was mid-turn when its worker stopped: pausing", matter.id)
            await self.matters.pause(matter.id, INTERRUPTED, report=True)
            return True
        try:
            await self.turn.run(matter)
        finally:
            await self._release(matter.id)
        return True

    async def _adopt(self) -> bool:
        async with self.services.db.read() as tx:
            waiting = await repo.sessions_to_adopt(tx)
        for session_id in waiting:
            async with self.services.db.write() as tx:
                await repo.adopt(tx, session_id, utcnow())
        return bool(waiting)

    async def _release(self, matter_id: int) -> None:
        async with self.services.db.write() as tx:
            matter = await tx.get(Matter, matter_id, with_for_update=True)
            if matter is not None and matter.lease_owner == self.owner:
                matter.running_since = None
                matter.lease_owner = matter.lease_expires_at = None
