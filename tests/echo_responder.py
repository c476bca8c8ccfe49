"""A stand-in for the Bot in channel tests: answers each inbox item with one reply.

It follows the Bot's contract (claim undelivered items, write the outbox with a key derived
from the input, mark delivered in the same transaction), so the channel tests exercise
ingest → inbox → outbox → sender without a model.
"""

from __future__ import annotations

from datetime import timedelta

from aiohttp import web

from bot.channels.ingest import INBOX_TOPIC
from bot.host.workers import Worker
from bot.services import Services
from storage.repos import conversations, inbox, outbox
from storage.repos.outbox import OUTBOX_TOPIC
from storage.types import utcnow


class EchoResponder(Worker):
    name = "echo"
    topics = (INBOX_TOPIC,)

    def __init__(self, services: Services, reply: str = "echo: {text}") -> None:
        self.services = services
        self.reply = reply

    async def run_once(self) -> bool:
        db = self.services.db
        async with db.write() as tx:
            at_once = inbox.Readiness(utcnow(), timedelta(0), timedelta(0))  # no burst window
            ids = await inbox.ready_conversations(tx, at_once, skip=(), limit=1)
            if not ids:
                return False
            conversation = await conversations.get(tx, ids[0])
            assert conversation is not None
            items = await inbox.pending_for_conversation(tx, ids[0])
            for item in items:
                message = item.payload
                await outbox.enqueue(
                    tx,
                    idempotency_key=f"echo-{item.id}",
                    platform=conversation.platform,
                    chat_id=conversation.chat_id,
                    conversation_id=conversation.id,
                    content_type="text",
                    content={"text": self.reply.format(text=message.get("addressed_text", ""))},
                    reply_to=message.get("message_id"),
                    in_thread=bool(message.get("thread_id")),
                    now=utcnow(),
                )
            await inbox.mark_delivered(tx, [i.id for i in items], "echo", utcnow())
        await self.services.notifier.notify(OUTBOX_TOPIC)
        return True


class EchoComponent:
    """Adds the EchoResponder to a running app (the way the Bot will be added)."""

    def __init__(self, reply: str = "echo: {text}") -> None:
        self.reply = reply

    def add_routes(self, app: web.Application) -> None:
        pass

    async def start(self, services: Services) -> None:
        if services.runs_workers:
            services.host.add(EchoResponder(services, self.reply))

    async def stop(self) -> None:
        pass
