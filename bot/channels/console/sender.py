"""Console replies need no network: delivering one is marking it sent for the page."""

from __future__ import annotations

from bot.channels.console.identity import CONSOLE_PLATFORM
from bot.channels.outbox_sender import Claimed, OutboxSender
from storage.repos import outbox
from storage.types import utcnow


class ConsoleSender(OutboxSender):
    name = "console-sender"
    platform = CONSOLE_PLATFORM

    async def deliver(self, row: Claimed) -> None:
        async with self.db.write() as tx:
            await outbox.finish(
                tx,
                row.id,
                self.instance_id,
                state=outbox.SENT,
                now=utcnow(),
                platform_message_ids=[f"console-{row.id}"],
            )
