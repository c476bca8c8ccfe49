"""The action worker: runs approved actions, each exactly once as the platform sees it.

It claims approved rows (a lease, storage/claims.py), marks them running, calls the kind's
executor with the row's idempotency key and records done or failed. A crash between the call
and the record leaves the row running with a lease whose owner is gone: the row is claimed
again and the executor runs again with the SAME key, so the platform de-duplicates (Feishu's
`uuid`, a calendar's idempotency key). A transient failure is retried with backoff; after
`max_attempts` the row is parked as failed, with its error, visible in /actions and /status;
the other rows go on. The same loop sweeps proposals past their expiry to `expired`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import timedelta

from bot.actions.ledger import ACTIONS_TOPIC, idempotency_key
from bot.actions.registry import ActionFailed, kind_of
from bot.host.backoff import backoff, error_line, log_failure
from bot.host.workers import Worker
from bot.services import Services
from storage.models import Action
from storage.repos import actions as repo
from storage.types import utcnow

log = logging.getLogger(__name__)

SWEEP_EVERY = 30.0  # seconds between expiry sweeps (an approval checks expiry itself)
RETRY_FIRST, RETRY_MOST = 5.0, 600.0  # seconds: the backoff between tries of one action


class ActionWorker(Worker):
    name = "actions"
    topics = (ACTIONS_TOPIC,)

    def __init__(
        self,
        services: Services,
        *,
        owner: str | None = None,
        lease: timedelta = timedelta(minutes=5),
        timeout: float = 120.0,  # one executor call; well inside the lease
        max_attempts: int = 5,
        batch: int = 10,
        retry_first: float = RETRY_FIRST,
    ) -> None:
        self.services = services
        self.owner = owner or services.host.instance_id
        self.lease = lease
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.batch = batch
        self.retry_first = retry_first
        self._swept_at = float("-inf")

    async def run_once(self) -> bool:
        await self.sweep()
        claimed = await self.claim()
        for action in claimed:
            await self.run(action)
        return bool(claimed)

    async def sweep(self, *, force: bool = False) -> int:
        if not force and time.monotonic() - self._swept_at < SWEEP_EVERY:
            return 0
        self._swept_at = time.monotonic()
        async with self.services.db.write() as tx:
            expired = await repo.expire_overdue(tx, utcnow())
        if expired:
            log.info("%d action proposals expired without an answer", expired)
        return expired

    async def claim(self) -> list[Action]:
        db = self.services.db
        async with db.read() as tx:
            if not await repo.has_due(tx, utcnow()):
                return []
        async with db.write() as tx:
            return await repo.claim_due(
                tx, owner=self.owner, now=utcnow(), limit=self.batch, lease=self.lease
            )

    async def execute(self, action: Action) -> tuple[str, str]:
        """Call the executor: (state, line) to record, done or failed; raises what is to be
        retried."""
        kind = kind_of(action.kind)
        if kind is None:
            return repo.FAILED, f"no executor for action kind {action.kind!r} in this version"
        try:
            async with asyncio.timeout(self.timeout):
                said = await kind.executor(self.services, action, idempotency_key(action))
            return repo.DONE, said
        except ActionFailed as exc:
            return repo.FAILED, str(exc) or "failed"

    async def run(self, action: Action) -> None:
        try:
            state, said = await self.execute(action)
        except Exception as exc:
            log_failure(log, f"action #{action.id} ({action.kind}) failed", exc)
            await self._retry_or_park(action, error_line(exc))
            return
        async with self.services.db.write() as tx:
            held = await repo.finish(
                tx,
                action.id,
                self.owner,
                state=state,
                now=utcnow(),
                result=said if state == repo.DONE else None,
                error=said if state == repo.FAILED else None,
            )
        if not held:
            log.warning("action #%s: claim lost before its result was recorded", action.id)

    async def _retry_or_park(self, action: Action, error: str) -> None:
        now = utcnow()
        async with self.services.db.write() as tx:
            if action.attempts >= self.max_attempts:
                await repo.finish(
                    tx,
                    action.id,
                    self.owner,
                    state=repo.FAILED,
                    now=now,
                    error=f"gave up after {action.attempts} tries: {error}",
                )
                return
            wait = backoff(action.attempts, first=self.retry_first, most=RETRY_MOST)
            await repo.retry_later(
                tx, action.id, self.owner, at=now + timedelta(seconds=wait), error=error
            )

    async def idle_timeout(self, poll_interval: float) -> float:
        async with self.services.db.read() as tx:
            next_due = await repo.next_due_at(tx)
        if next_due is None:
            return poll_interval
        return max(0.0, min(poll_interval, (next_due - utcnow()).total_seconds()))
