"""Scheduling Matters: at most MAKA_MATTERS_CONCURRENCY turns at once in this process (the
Host's pool: one loop claims, the turns run side by side, mostly waiting for the model); a
due wake (a persisted Host timer) or new input makes a Matter runnable; a Matter found
mid-turn after a restart is paused and reported, not blindly re-run; so is one whose turn
raised (a bug, an input nothing expected), where running it again would only fail again."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from bot.host.backoff import error_line, log_failure
from bot.host.workers import PoolWorker
from bot.matters.service import TOPIC, MatterService
from bot.matters.turn import MatterTurn
from bot.services import Services
from storage.models import Matter
from storage.repos import matters as repo
from storage.types import utcnow

log = logging.getLogger(__name__)
INTERRUPTED = "interrupted by a restart mid-turn; resume it with /matters resume"


@dataclass(frozen=True)
class Claimed:
    matter: Matter
    interrupted: bool  # it was mid-turn when the process holding it went away


class MatterWorker(PoolWorker[Claimed]):
    name = "matters"
    topics = (TOPIC, "session_inbox")

    def __init__(self, services: Services, turn: MatterTurn, matters: MatterService) -> None:
        self.services, self.turn, self.matters = services, turn, matters
        self.concurrency = services.settings.matters_concurrency
        self.lease = timedelta(seconds=turn.timeout + 60)

    @property
    def owner(self) -> str:
        return self.services.host.instance_id

    async def claim(self, n: int) -> list[Claimed]:
        """Up to `n` runnable Matters, claimed (delegated Sessions are adopted as Matters
        first), each in a transaction of its own, since a Matter's claim also starts its run."""
        units: list[Claimed] = []
        while len(units) < n and (unit := await self._claim_one()) is not None:
            units.append(unit)
        return units

    async def _claim_one(self) -> Claimed | None:
        db = self.services.db
        await self._adopt()
        await self.matters.answer_cancelled_input()  # input a cancelled Matter will never read
        async with db.read() as tx:
            if not await repo.has_runnable(tx, utcnow()):
                return None
        async with db.write() as tx:
            matter = await repo.claim_runnable(tx, owner=self.owner, now=utcnow(), lease=self.lease)
            if matter is None:
                return None
            interrupted = matter.running_since is not None
            if not interrupted:
                matter.running_since = utcnow()
                matter.run_count += 1
            return Claimed(matter, interrupted)

    async def work(self, unit: Claimed) -> None:
        matter = unit.matter
        if unit.interrupted:
            log.warning("matter %s was mid-turn when its worker stopped: pausing", matter.id)
            await self.matters.pause(matter.id, INTERRUPTED, report=True)
            return
        try:
            await self.turn.run(matter)
        except Exception as exc:  # paused and reported, as a turn whose model failed is: run
            # again at once, it would fail again, as fast as the pool can claim it
            log_failure(log, f"matter {matter.id}: its turn failed, pausing it", exc)
            await self.matters.pause(matter.id, f"the turn failed: {error_line(exc)}", report=True)
        finally:
            await self._release(matter.id)

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
