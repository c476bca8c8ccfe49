"""The discovery heartbeat: a Host worker that beats every interval the owner set (never a
model), runs the pre-check (bot/discovery/precheck.py) and, only when it says so, a round
(bot/discovery/rounds.py). A skip is recorded with its reason and costs no model call.

Before the pre-check, findings the Bot has told are settled as delivered (their message
sent) and the owner's feedback on them is recorded: replies to and reactions on a finding's
message (bot/discovery/delivery.py), shown to the next Judgement. Silence records nothing:
it is not rejection."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import Any

from bot.discovery import delivery
from bot.discovery.passes import PURPOSES
from bot.discovery.precheck import LOOKAHEAD, Decision, decide
from bot.discovery.rounds import OWNER_PLATFORMS, RoundOutcome, RoundRunner
from bot.discovery.schedule import start_of_day
from bot.host.workers import Worker
from sources.feishu import owner_items
from storage import claims
from storage.db import Database
from storage.models import DiscoveryRound, DiscoveryState
from storage.repos import discovery as repo
from storage.repos import model_calls
from storage.types import utcnow

log = logging.getLogger(__name__)
TOPIC = "discovery"


@dataclass(frozen=True)
class Beat:
    """What one heartbeat did: `idle` (off or not due), `skipped` (reason), or a round."""

    did: str
    reason: str = ""
    round: RoundOutcome | None = None


class DiscoveryWorker(Worker):
    name = "discovery"
    topics = (TOPIC,)

    def __init__(
        self,
        db: Database,
        runner: RoundRunner,
        defaults: repo.Defaults,
        *,
        owner: str,
        tz: tzinfo,
        lease: timedelta,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.db, self.runner, self.defaults = db, runner, defaults
        self.owner, self.tz, self.lease, self.clock = owner, tz, lease, clock

    async def run_once(self) -> bool:
        beat = await self.beat(self.clock())
        return beat.did != "idle"

    async def beat(self, now: datetime) -> Beat:
        async with self.db.read() as tx:  # an idle beat only reads
            state = await repo.get_state(tx) or repo.state_of(self.defaults, now)
            open_round = await repo.unfinished_round(tx)
        if not _due(state, now) and open_round is None:
            return Beat("idle")
        async with self.db.write() as tx:
            await repo.ensure_state(tx, self.defaults, now)
            claimed = await repo.claim_state(tx, owner=self.owner, lease=self.lease, now=now)
        if claimed is None:
            return Beat("idle")  # another replica beats
        try:
            return await self._beat(claimed, now)
        finally:
            async with self.db.write() as tx:
                await claims.release_rows(tx, DiscoveryState, self.owner, [claimed.id])

    async def _beat(self, state: DiscoveryState, now: datetime) -> Beat:
        async with self.db.read() as tx:
            open_round = await repo.unfinished_round(tx)
        if open_round is not None:  # a round the last process did not finish
            return await self._run(state, open_round, dict(open_round.watermark), now)
        if not _due(state, now):
            return Beat("idle")
        await delivery.settle_deliveries(self.db)
        await delivery.collect_feedback(self.db, self.runner.owner, OWNER_PLATFORMS, now)
        decision, signals = await pre_check(self.db, state, now, self.tz)
        async with self.db.write() as tx:
            row = await tx.get(DiscoveryState, state.id)
            assert row is not None
            row.next_round_at = now + timedelta(seconds=row.interval_seconds)
            row.updated_at = now
            row.run_requested = False  # this beat answers a /discovery run, run or skipped
            if not decision.run:
                await repo.record_skip(tx, decision.reason, now)
                return Beat("skipped", decision.reason)
            round_ = await repo.open_round(tx, decision.reason, signals, now)
        return await self._run(state, round_, signals, now)

    async def _run(
        self, state: DiscoveryState, round_: DiscoveryRound, signals: dict[str, Any], now: datetime
    ) -> Beat:
        outcome = await self.runner.run(round_, state, now)
        if outcome.phase == "done":
            async with self.db.read() as tx:
                after = await repo.signals(tx, now, now.astimezone(self.tz).date(), LOOKAHEAD)
            async with self.db.write() as tx:
                row = await tx.get(DiscoveryState, state.id)
                assert row is not None
                # What the round wrote itself (notes, deadlines noted) is not news next time.
                row.watermark = {
                    **signals,
                    "notes": after["notes"],
                    "deadlines": after["deadlines"],
                }
                row.last_round_at = now
                if row.next_round_at is None or row.next_round_at < now:
                    row.next_round_at = now + timedelta(seconds=row.interval_seconds)
        return Beat("round", round_.reason, outcome)


async def pre_check(
    db: Database, state: DiscoveryState, now: datetime, tz: tzinfo
) -> tuple[Decision, dict[str, Any]]:
    """The facts the pre-check decides on, read in one transaction, and its decision: what
    every due beat runs (benchmarks/growth.py times it). Of the message history it reads the
    newest record's id only."""
    async with db.read() as tx:
        signals = await repo.signals(tx, now, now.astimezone(tz).date(), LOOKAHEAD)
        soon = await owner_items.upcoming(tx, now, now + LOOKAHEAD)
        signals["soon"] = sorted(i.key for i in soon)
        used = await model_calls.tokens_since(tx, start_of_day(now, tz), PURPOSES)
    return decide(state, signals, now=now, tz=tz, tokens_today=used), signals


def _due(state: DiscoveryState, now: datetime) -> bool:
    if state.run_requested:
        return True
    if not state.enabled:
        return False
    return state.next_round_at is None or state.next_round_at <= now
