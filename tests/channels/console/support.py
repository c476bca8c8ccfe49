"""Console tests' stand-ins: no Bot (what ingest hands over stays in the inbox to be read) and
outbox rows written into a console chat the way the Bot writes them."""

from __future__ import annotations

import itertools
from typing import Any

from aiohttp import web
from sqlalchemy import select

from bot.channels.console.identity import CONSOLE_PLATFORM
from bot.services import Services
from storage.models import InboxItem
from storage.repos import conversations, outbox
from storage.types import utcnow
from tests.apps import RunningApp

_KEYS = itertools.count()


class NoBot:
    def add_routes(self, app: web.Application) -> None:
        pass

    async def start(self, services: Services) -> None:
        pass

    async def stop(self) -> None:
        pass


async def write_replies(
    app: RunningApp, chat_id: str, rows: list[tuple[str, dict[str, Any]]]
) -> list[int]:
    """Outbox rows (content type, content) in a console chat, in order: their ids."""
    chat_type = "group" if chat_id == "console-group" else "p2p"
    wanted = conversations.NewConversation(CONSOLE_PLATFORM, chat_id, chat_type)
    ids = []
    async with app.services.db.write() as tx:
        found = await conversations.get_or_create_many(tx, [wanted])
        for content_type, content in rows:
            row_id = await outbox.enqueue(
                tx,
                idempotency_key=f"test-{next(_KEYS)}",
                platform=CONSOLE_PLATFORM,
                chat_id=chat_id,
                conversation_id=found[(CONSOLE_PLATFORM, chat_id)].id,
                content_type=content_type,
                content=content,
                now=utcnow(),
            )
            assert row_id is not None
            ids.append(row_id)
    await app.services.notifier.notify(outbox.OUTBOX_TOPIC)
    return ids


async def clicks_handed_to_the_bot(app: RunningApp) -> list[dict[str, Any]]:
    """The payloads of the `click` inbox items, oldest first."""
    async with app.services.db.read() as tx:
        items = (
            await tx.scalars(
                select(InboxItem).where(InboxItem.kind == "click").order_by(InboxItem.id)
            )
        ).all()
    return [item.payload for item in items]
