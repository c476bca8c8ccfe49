"""The Bot worker: one turn at a time per conversation, across every replica, and many
conversations' turns at once (`MAKA_BOT_CONCURRENCY`: turns mostly wait for the model).

A conversation is taken only once it is ready: its input has been quiet for
`MAKA_BOT_DEBOUNCE` seconds (a burst reaches the model as one batch), or its oldest waiting
item is `MAX_DEBOUNCE` old (a conversation that never goes quiet is still answered). Waiting
for that holds no turn slot: the Host's pool claims only ready conversations and wakes when
the next one will be. A conversation's turn runs under the named lease
`bot:conversation:<id>` (short, renewed while the turn runs), so two replicas never answer the
same batch; input that arrives while a turn runs waits for that turn and forms the next batch.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from bot.agent.tools import ToolRegistry
from bot.assistant.commands import CommandRegistry
from bot.assistant.turn import BotTurn
from bot.assistant.turn_context import TurnContext
from bot.channels.ingest import INBOX_TOPIC
from bot.host.renewal import renewed
from bot.host.workers import PoolWorker
from bot.services import Services
from storage.repos import inbox, leases
from storage.types import utcnow

log = logging.getLogger(__name__)

# Short and renewed while the turn runs (every third of it): after a crash, another process
# (or the restarted one) takes the conversation within seconds, not minutes.
LEASE_TTL = timedelta(seconds=15)
MAX_DEBOUNCE = 3.0
WAITING_SCANNED = 200  # conversations with input looked at per claim, oldest input first


def lease_name(conversation_id: int) -> str:
    return f"bot:conversation:{conversation_id}"


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
        self._next_ready_in: float | None = None  # seconds until a waiting burst is ready

    @property
    def owner(self) -> str:
        return self.services.host.instance_id

    async def claim(self) -> int | None:
        """A ready conversation whose lease this process now holds, or None."""
        now = utcnow()
        debounce = timedelta(seconds=self.services.settings.bot_debounce)
        async with self.services.db.read() as tx:
            waiting = await inbox.waiting_conversations(tx, limit=WAITING_SCANNED)
        ready, soonest = [], None
        for conv in waiting:
            if conv.id in self._busy:
                continue
            at = min(conv.newest + debounce, conv.oldest + timedelta(seconds=MAX_DEBOUNCE))
            if at <= now:
                ready.append(conv.id)
            elif soonest is None or at < soonest:
                soonest = at
        self._next_ready_in = None if soonest is None else (soonest - now).total_seconds()
        for conversation_id in ready:
            if await self._take(conversation_id):
                return conversation_id
        return None

    async def idle_timeout(self, poll_interval: float) -> float:
        if self._next_ready_in is None:
            return poll_interval
        return max(0.01, min(poll_interval, self._next_ready_in))

    async def work(self, conversation_id: int) -> None:
        try:
            async with renewed(
                lambda: self._renew(conversation_id), LEASE_TTL, f"conversation {conversation_id}"
            ):
                await self.turn.run(conversation_id)
        finally:
            self._busy.discard(conversation_id)
            async with self.services.db.write() as tx:
                await leases.release(tx, lease_name(conversation_id), self.owner)

    async def _take(self, conversation_id: int) -> bool:
        self._busy.add(conversation_id)
        taken = False
        try:
            async with self.services.db.write() as tx:
                taken = await leases.acquire(
                    tx, lease_name(conversation_id), self.owner, LEASE_TTL, utcnow()
                )
        finally:  # a failed lease write must not leave the mark: this process would
            if not taken:  # skip the conversation for good
                self._busy.discard(conversation_id)
        return taken

    async def _renew(self, conversation_id: int) -> bool:
        async with self.services.db.write() as tx:
            return await leases.acquire(
                tx, lease_name(conversation_id), self.owner, LEASE_TTL, utcnow()
            )
