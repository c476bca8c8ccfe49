"""The Bot worker: one turn at a time per conversation, across every replica.

A conversation's turn runs under the named lease `bot:conversation:<id>` (renewed while the
turn runs), so two replicas never answer the same batch. Input that arrives in a burst is
gathered for `MAKA_BOT_DEBOUNCE` seconds so it reaches the model as one batch; input that
arrives while a turn runs waits for that turn and forms the next batch.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from sqlalchemy import func, select

from bot.agent.tools import ToolRegistry
from bot.assistant.commands import CommandRegistry
from bot.assistant.turn import BotTurn
from bot.assistant.turn_context import TurnContext
from bot.channels.ingest import INBOX_TOPIC
from bot.host.renewal import renewed
from bot.host.workers import Worker
from bot.services import Services
from storage.models import InboxItem
from storage.repos import inbox, leases
from storage.types import utcnow

log = logging.getLogger(__name__)

# Short and renewed while the turn runs (every third of it): after a crash, another process
# (or the restarted one) takes the conversation within seconds, not minutes.
LEASE_TTL = timedelta(seconds=15)
MAX_DEBOUNCE = 3.0


def lease_name(conversation_id: int) -> str:
    return f"bot:conversation:{conversation_id}"


class BotWorker(Worker):
    name = "bot"
    topics = (INBOX_TOPIC,)
    concurrency = 4

    def __init__(
        self, services: Services, commands: CommandRegistry, tools: ToolRegistry[TurnContext]
    ) -> None:
        self.services = services
        self.turn = BotTurn(services, commands, tools)
        self._busy: set[int] = set()  # conversations this process is answering right now

    @property
    def owner(self) -> str:
        return self.services.host.instance_id

    async def run_once(self) -> bool:
        conversation_id = await self._take_a_conversation()
        if conversation_id is None:
            return False
        try:
            async with renewed(
                lambda: self._renew(conversation_id), LEASE_TTL, f"conversation {conversation_id}"
            ):
                await self._gather_burst(conversation_id)
                await self.turn.run(conversation_id)
        finally:
            self._busy.discard(conversation_id)
            async with self.services.db.write() as tx:
                await leases.release(tx, lease_name(conversation_id), self.owner)
        return True

    async def _take_a_conversation(self) -> int | None:
        async with self.services.db.read() as tx:
            waiting = await inbox.conversations_with_pending(tx, limit=50)
        for conversation_id in waiting:
            if conversation_id in self._busy:
                continue
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
            if taken:
                return conversation_id
        return None

    async def _renew(self, conversation_id: int) -> bool:
        async with self.services.db.write() as tx:
            return await leases.acquire(
                tx, lease_name(conversation_id), self.owner, LEASE_TTL, utcnow()
            )

    async def _gather_burst(self, conversation_id: int) -> None:
        """Wait until input has been quiet for the debounce window (at most MAX_DEBOUNCE)."""
        debounce = self.services.settings.bot_debounce
        waited = 0.0
        while debounce > 0 and waited < MAX_DEBOUNCE:
            async with self.services.db.read() as tx:
                newest = await tx.scalar(
                    select(func.max(InboxItem.created_at)).where(
                        InboxItem.conversation_id == conversation_id,
                        InboxItem.delivered_at.is_(None),
                    )
                )
            if newest is None:
                return
            quiet_for = (utcnow() - newest).total_seconds()
            if quiet_for >= debounce:
                return
            pause = min(debounce - quiet_for, MAX_DEBOUNCE - waited)
            await asyncio.sleep(pause)
            waited += pause
