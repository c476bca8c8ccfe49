"""Console replies need no network: delivering one is marking it sent for the page."""

from __future__ import annotations

from datetime import timedelta

from bot.channels.console.identity import CONSOLE_PLATFORM
from bot.host.workers import Worker
from storage.db import Database
from storage.repos import outbox
from storage.types import utcnow

PLATFORM = CONSOLE_PLATFORM


class ConsoleSender(Worker):
    """Console replies need no network: delivering is marking them sent for the page."""

    name = "console-sender"
    topics = (outbox.OUTBOX_TOPIC,)

    def __init__(self, db: Database, instance_id: str) -> None:
        self.db, self.instance_id = db, instance_id

    async def run_once(self) -> bool:
        async with self.db.read() as session:
            if not await outbox.has_due(session, platform=PLATFORM, now=utcnow()):
                return False
        async with self.db.write() as session:
            rows = await outbox.claim_due(
                session,
                platform=PLATFORM,
                owner=self.instance_id,
                now=utcnow(),
                limit=50,
                lease=timedelta(minutes=1),
            )
            for row in rows:
                await outbox.finish(
                    session,
                    row.id,
                    self.instance_id,
                    state=outbox.SENT,
                    now=utcnow(),
                    platform_message_ids=[f"console-{row.id}"],
                )
        return bool(rows)
