"""The Bot worker: one turn at a time per conversation, across every replica, and many
conversations' turns at once (`MAKA_BOT_CONCURRENCY`: turns mostly wait for the model).

A conversation is taken only once it is ready: its input has been quiet for
`MAKA_BOT_DEBOUNCE` seconds (a burst reaches the model as one batch), or its oldest waiting
item is `MAX_DEBOUNCE` old (a conversation that never goes quiet is still answered). Waiting
for that holds no turn slot: the Host's pool claims only ready conversations and wakes when
the next one will be. A conversation's turn runs under the named lease
`bot:conversation:<id>` (short, renewed while the turn runs), so two replicas never answer the
same batch; input that arrives while a turn runs waits for that turn and forms the next batch.
Claiming only marks the conversation busy in this process: the lease is taken in the turn's
first transaction and given back in its last (`ConversationLease`, the turn's `TurnHold`).
A conversation whose lease another turn holds (another replica's, or one that took it over)
is not claimed again for `HELD_ELSEWHERE` seconds: the holder answers what waits there once
its turn ends, and until then a claim would find it ready and the lease taken, again and
again. A turn that fails is counted against its batch (bot/assistant/failures.py): backed
off, tried again on its own, parked after `MAKA_BOT_MAX_ATTEMPTS`; the conversation is free
again at once for whatever else waits there.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot.agent.tools import ToolRegistry
from bot.assistant.commands import CommandRegistry
from bot.assistant.failures import record_failed_turn
from bot.assistant.turn import BotTurn
from bot.assistant.turn_context import TurnContext
from bot.channels.ingest import INBOX_TOPIC
from bot.host.renewal import renewed
from bot.host.workers import PoolWorker
from bot.services import Services
from storage.db import Database
from storage.repos import inbox, leases
from storage.types import utcnow

log = logging.getLogger(__name__)

# Short and renewed while the turn runs (every third of it): after a crash, another process
# (or the restarted one) takes the conversation within seconds, not minutes.
LEASE_TTL = timedelta(seconds=15)
MAX_DEBOUNCE = 3.0
HELD_ELSEWHERE = timedelta(seconds=2)


def lease_name(conversation_id: int) -> str:
    return f"bot:conversation:{conversation_id}"


@dataclass
class ConversationLease:  # a TurnHold
    conversation_id: int
    owner: str
    held_elsewhere: bool = field(default=False, init=False)  # found another turn's

    @property
    def name(self) -> str:
        return lease_name(self.conversation_id)

    @property
    def ttl(self) -> timedelta:
        return LEASE_TTL

    def lost(self) -> None:
        self.held_elsewhere = True

    async def renew(self, db: Database) -> bool:
        # Not holds.check(): a beat that finds the lease given back (just after the turn's
        # last write) is no takeover.
        async with db.write() as tx:
            return await leases.renew(tx, self.name, self.owner, LEASE_TTL, utcnow())


class BotWorker(PoolWorker[int]):
    name = "bot"
    topics = (INBOX_TOPIC,)

    def __init__(
        self, services: Services, commands: CommandRegistry, tools: ToolRegistry[TurnContext]
    ) -> None:
        self.services = services
        self.concurrency = services.settings.bot_concurrency
        self.turn = BotTurn(services, commands, tools)
        self._busy: set[int] = set()  # conversations this process is answering right now
        self._held_elsewhere: dict[int, datetime] = {}  # not claimed again until then
        self._next_ready_in: float | None = None  # seconds until a waiting burst is ready

    @property
    def owner(self) -> str:
        return self.services.host.instance_id

    async def claim(self, n: int) -> list[int]:
        """Up to `n` ready conversations, oldest input first, marked busy in this process
        (their leases are the turns' to take). Fewer than `n`: none more is ready, and the
        next wake-up is when the first still gathering its burst will be."""
        now = utcnow()
        readiness = inbox.Readiness(
            now,
            timedelta(seconds=self.services.settings.bot_debounce),
            timedelta(seconds=MAX_DEBOUNCE),
        )
        self._held_elsewhere = {c: t for c, t in self._held_elsewhere.items() if t > now}
        skip = self._busy | self._held_elsewhere.keys()
        wakes = list(self._held_elsewhere.values())  # when a held one may be tried again
        async with self.services.db.read() as tx:
            taken = await inbox.ready_conversations(tx, readiness, skip=skip, limit=n)
            if len(taken) < n and (first := await inbox.next_ready_at(tx, readiness, skip=skip)):
                wakes.append(first)
        soonest = min(wakes, default=None)
        self._next_ready_in = None if soonest is None else (soonest - now).total_seconds()
        self._busy.update(taken)
        return taken

    async def idle_timeout(self, poll_interval: float) -> float:
        if self._next_ready_in is None:
            return poll_interval
        return max(0.01, min(poll_interval, self._next_ready_in))

    async def work(self, conversation_id: int) -> None:
        lease = ConversationLease(conversation_id, self.owner)
        ended = False
        try:
            async with renewed(
                lambda: lease.renew(self.services.db), LEASE_TTL, f"conversation {conversation_id}"
            ):
                await self.turn.run(conversation_id, lease)
            ended = True  # the turn gave the lease back in its last transaction
        except Exception as exc:  # backed off or parked before the conversation is free
            await record_failed_turn(self.services, conversation_id, exc)
        finally:
            try:
                if lease.held_elsewhere:
                    self._held_elsewhere[conversation_id] = utcnow() + HELD_ELSEWHERE
                if not ended:  # the turn failed: whatever it holds goes back (if anything)
                    async with self.services.db.write() as tx:
                        await leases.release(tx, lease.name, self.owner)
            finally:  # every mark is undone, whatever happened: a mark left behind would make
                # this process skip the conversation for good. Only now, with the lease given
                # back: a turn claimed meanwhile takes the lease under the same owner, and the
                # release would take it from that turn, which then stops as "taken over".
                self._busy.discard(conversation_id)
