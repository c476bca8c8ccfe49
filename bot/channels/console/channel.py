"""`/console`: chat with the bot as a DM or as a group member, through the same ingest,
inbox, Bot and outbox path as Feishu. Its "sender" marks replies delivered; the page reads
them back. It speaks as the owner unless the page picks another identity, and it is only on
when no Feishu app is configured (or MAKA_CONSOLE=true), because it needs no login.
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from importlib import resources
from typing import Any

from aiohttp import web
from pydantic import BaseModel, Field, ValidationError
from sqlalchemy import select

from bot.channels.console.identity import CONSOLE_PLATFORM, console_identity
from bot.channels.feishu.sender import OUTBOX_TOPIC
from bot.channels.messages import InboundMessage
from bot.config import Settings
from bot.host.workers import Worker
from bot.services import Services
from storage.db import Database
from storage.models import InboundEvent
from storage.repos import conversations, outbox
from storage.types import utcnow

PLATFORM = CONSOLE_PLATFORM
CHATS = {"dm": ("console-dm", "p2p"), "group": ("console-group", "group")}
BOT_NAME = "Maka"


class PostMessage(BaseModel):
    text: str = Field(min_length=1, max_length=20_000)
    chat: str = Field(default="dm", pattern="^(dm|group)$")
    mention: bool = False
    sender: str | None = Field(default=None, max_length=128)


class ConsoleSender(Worker):
    """Console replies need no network: delivering is marking them sent for the page."""

    name = "console-sender"
    topics = (OUTBOX_TOPIC,)

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


class ConsoleChannel:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.services: Services | None = None

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/console", self._page)
        app.router.add_post("/console/api/messages", self._post)
        app.router.add_get("/console/api/messages", self._list)

    async def start(self, services: Services) -> None:
        self.services = services
        if services.runs_workers:
            services.host.add(ConsoleSender(services.db, services.host.instance_id))

    async def stop(self) -> None:
        self.services = None

    async def _page(self, _request: web.Request) -> web.Response:
        html = resources.files(__package__).joinpath("console.html").read_text("utf-8")
        return web.Response(text=html, content_type="text/html")

    async def _post(self, request: web.Request) -> web.Response:
        services = self._require_services()
        try:
            body = PostMessage.model_validate(await request.json())
        except (ValueError, ValidationError) as exc:
            return web.json_response({"error": str(exc)}, status=400)
        chat_id, chat_type = CHATS[body.chat]
        mentioned = chat_type == "p2p" or body.mention
        text = f"@{BOT_NAME} {body.text}" if body.mention else body.text
        message = InboundMessage(
            platform=PLATFORM,
            message_id=f"console-{secrets.token_hex(8)}",
            chat_id=chat_id,
            chat_type=chat_type,
            sender_id=body.sender or console_identity(self.settings),
            text=text,
            addressed_text=body.text,
            message_type="text",
            created_at=utcnow(),
            mentioned_bot=mentioned and chat_type == "group",
        )
        result = await services.ingest.accept(message)
        return web.json_response(
            {"message_id": message.message_id, "outcome": result.outcome.value}
        )

    async def _list(self, request: web.Request) -> web.Response:
        services = self._require_services()
        chat = request.query.get("chat", "dm")
        if chat not in CHATS:
            return web.json_response({"error": "chat must be dm or group"}, status=400)
        chat_id, _ = CHATS[chat]
        async with services.db.read() as session:
            conversation = await conversations.by_chat(session, PLATFORM, chat_id)
            if conversation is None:
                return web.json_response({"messages": []})
            events = (
                await session.scalars(
                    select(InboundEvent)
                    .where(InboundEvent.platform == PLATFORM, InboundEvent.chat_id == chat_id)
                    .order_by(InboundEvent.id)
                )
            ).all()
            replies = await outbox.by_conversation(session, conversation.id, limit=1000)
        items: list[dict[str, Any]] = [
            {
                "from": "user",
                "sender": e.payload.get("sender_id"),
                "text": e.payload.get("text"),
                "at": e.received_at.isoformat(),
                "status": e.status,
            }
            for e in events
        ]
        items += [
            {
                "from": "bot",
                "text": _reply_text(r.content_type, r.content),
                "at": r.created_at.isoformat(),
                "status": r.state,
            }
            for r in replies
        ]
        items.sort(key=lambda item: str(item["at"]))
        return web.json_response({"messages": items})

    def _require_services(self) -> Services:
        if self.services is None:
            raise web.HTTPServiceUnavailable(text="starting")
        return self.services


def _reply_text(content_type: str, content: dict[str, Any]) -> str:
    if content_type == "text":
        return str(content.get("text", ""))
    if content_type == "post":
        title = content.get("title")
        paragraphs = [str(p) for p in content.get("paragraphs", [])]
        return "\n".join(([str(title)] if title else []) + paragraphs)
    return f"[{content_type}]"
