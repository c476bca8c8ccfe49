"""Keeps the owner's sign-in alive: refreshes the token ahead of its expiry (so it lasts as
long as the refresh token), whether or not anything asked for it. A red sign-in is left
alone (the owner must sign in again); a transient failure waits for the row's `retry_at`."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from bot.host.workers import Worker
from bot.owner.refresh import Refresher, SignInNeeded, TokenUnavailable
from storage.repos import owner_signin
from storage.types import utcnow

log = logging.getLogger(__name__)

REFRESH_AHEAD = timedelta(minutes=15)  # well before callers' 5 minutes
LONGEST_IDLE = 60.0  # seconds: a sign-in made by another replica is noticed within this


class TokenRefreshWorker(Worker):
    name = "owner-token-refresh"
    topics = (owner_signin.SIGNIN_TOPIC,)

    def __init__(self, refresher: Refresher, *, ahead: timedelta = REFRESH_AHEAD) -> None:
        self.refresher = refresher
        self.ahead = ahead
        self._next_due: datetime | None = None

    async def run_once(self) -> bool:
        async with self.refresher.db.read() as tx:
            row = await owner_signin.token(tx)
        self._next_due = None
        if row is None or row.state == owner_signin.RED:
            return False
        now = utcnow()
        # Ahead of expiry, but never sooner than half the token's life: a token issued for
        # less than `ahead` is not refreshed again and again as fast as Feishu answers.
        life = row.access_expires_at - row.updated_at
        due = row.access_expires_at - min(self.ahead, life / 2)
        if row.retry_at is not None:
            due = max(due, row.retry_at)
        if due > now:
            self._next_due = due
            return False
        try:
            await self.refresher.refresh(within=self.ahead)
        except SignInNeeded as exc:  # red now, or unreadable (the key changed): not again soon
            log.warning("owner token not refreshed: %s", exc)
            return False
        except TokenUnavailable as exc:  # backed off on the row, or another replica's turn
            log.info("owner token not refreshed yet: %s", exc)
            return False
        return True

    async def idle_timeout(self, poll_interval: float) -> float:
        if self._next_due is None:
            return LONGEST_IDLE
        until = (self._next_due - utcnow()).total_seconds()
        return max(poll_interval, min(LONGEST_IDLE, until))
