"""`/console/`: chat with the bot as a DM or as a group member, through the same ingest,
inbox, Bot and outbox path as Feishu. It speaks as the owner, or as one of the test
identities the page offers (identity.py). It is on when no Feishu app is configured (or with
MAKA_CONSOLE=true), answers only same-origin JSON, and asks for MAKA_ADMIN_TOKEN when one is
set (required off loopback): see guard.py.
"""

from __future__ import annotations

import secrets
from importlib import resources
from typing import Literal, TypeVar

from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import select

from bot.channels.clicks import InvalidClick
from bot.channels.console import view
from bot.channels.console.card_click import Clicker, RefusedClick, click_on
from bot.channels.console.identity import CONSOLE_PLATFORM, dm_chat_id, identity_for
from bot.channels.console.progress import ConsoleProgressSender
from bot.channels.console.sender import ConsoleSender
from bot.channels.messages import InboundMessage
from bot.channels.services import ChannelServices
from bot.config import Settings
from bot.web.guard import AdminGuard
from bot.web.json_body import bad_request, read_json_object
from storage.models import InboundEvent
from storage.repos import conversations, outbox, progress_cards
from storage.types import utcnow

PLATFORM = CONSOLE_PLATFORM
GROUP_CHAT = "console-group"
BOT_NAME = "Maka"
Identity = Literal["owner", "admin", "member"]
M = TypeVar("M", bound=BaseModel)


class PostMessage(BaseModel):
    """What the page sends. Unknown fields (such as a `sender` id) are refused."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    text: str = Field(min_length=1, max_length=20_000)
    chat: Literal["dm", "group"] = "dm"
    mention: bool = False
    as_: Identity = Field(default="owner", alias="as")


class PostClick(BaseModel):
    """A click on a card's button: the card's message and the button's index, never its
    action (card_click.py reads that from the stored card)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    message_id: str = Field(min_length=1, max_length=40)
    button: int = Field(ge=0, lt=100, strict=True)
    # made by the page for each click, the same if it sends that click again
    click_id: str = Field(pattern=r"^[A-Za-z0-9_-]{8,64}$")
    chat: Literal["dm", "group"] = "dm"
    as_: Identity = Field(default="owner", alias="as")


class Login(BaseModel):
    model_config = ConfigDict(extra="forbid")

    token: str = Field(min_length=1, max_length=512)


def chat_of(chat: str, identity: str) -> tuple[str, str]:
    """(chat_id, chat_type): the group is shared; each identity has its own DM."""
    return (GROUP_CHAT, "group") if chat == "group" else (dm_chat_id(identity), "p2p")


class ConsoleChannel:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.guard = AdminGuard(settings)
        self.services: ChannelServices | None = None

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/console", self._to_page)
        app.router.add_get("/console/", self._page)
        app.router.add_post("/console/api/login", self._login)
        app.router.add_post("/console/api/messages", self._post)
        app.router.add_get("/console/api/messages", self._list)
        app.router.add_post("/console/api/clicks", self._click)

    async def start(self, services: ChannelServices) -> None:
        self.services = services
        if services.runs_workers:
            services.host.add(ConsoleSender(services.db, services.host.instance_id))
            if self.settings.progress_cards:
                services.host.add(
                    ConsoleProgressSender(services.db, services.notifier, services.host.instance_id)
                )

    async def stop(self) -> None:
        self.services = None

    async def _to_page(self, request: web.Request) -> web.Response:
        # The page's relative URLs (api/messages) resolve under /console/ only.
        self.guard.check_host(request)
        raise web.HTTPFound("/console/")

    async def _page(self, request: web.Request) -> web.Response:
        self.guard.check_host(request)
        html = resources.files(__package__).joinpath("console.html").read_text("utf-8")
        return web.Response(
            text=html,
            content_type="text/html",
            headers={"X-Frame-Options": "DENY", "Content-Security-Policy": _CSP},
        )

    async def _login(self, request: web.Request) -> web.Response:
        self._check_call(request, writes=True)
        body = await _read(request, Login)
        if not self.guard.needs_login:
            return web.json_response({"ok": True, "login": "not needed"})
        try:
            matches = self.guard.token_matches(request, body.token)
        except web.HTTPTooManyRequests as refused:
            return web.json_response(
                {"error": refused.text},
                status=refused.status,
                headers={"Retry-After": refused.headers["Retry-After"]},
            )
        if not matches:
            return web.json_response({"error": "wrong token"}, status=401)
        response = web.json_response({"ok": True})
        self.guard.set_login_cookie(request, response, path="/console")
        return response

    async def _post(self, request: web.Request) -> web.Response:
        self._check_call(request, writes=True, login=True)
        services = self._require_services()
        body = await _read(request, PostMessage)
        chat_id, chat_type = chat_of(body.chat, body.as_)
        mentioned = chat_type == "group" and body.mention  # a DM needs no @mention
        message = InboundMessage(
            platform=PLATFORM,
            message_id=f"console-{secrets.token_hex(8)}",
            chat_id=chat_id,
            chat_type=chat_type,
            sender_id=identity_for(self.settings, body.as_),
            text=f"@{BOT_NAME} {body.text}" if mentioned else body.text,
            addressed_text=body.text,
            message_type="text",
            created_at=utcnow(),
            mentioned_bot=mentioned,
        )
        result = await services.ingest.accept(message)
        return web.json_response(
            {"message_id": message.message_id, "outcome": result.outcome.value}
        )

    async def _click(self, request: web.Request) -> web.Response:
        """A click here is a click in Feishu: the same InboundClick, stored once and handled
        by the Bot as the clicker; a redelivered click id is a duplicate."""
        self._check_call(request, writes=True, login=True)
        services = self._require_services()
        body = await _read(request, PostClick)
        chat_id, chat_type = chat_of(body.chat, body.as_)
        clicker = Clicker(identity_for(self.settings, body.as_), chat_id, chat_type)
        try:
            click = await click_on(
                services.db, clicker, body.message_id, body.button, body.click_id
            )
        except (RefusedClick, InvalidClick) as refused:
            raise bad_request(str(refused)) from None
        result = await services.ingest.accept_click(click)
        return web.json_response({"outcome": result.outcome.value})

    async def _list(self, request: web.Request) -> web.Response:
        self._check_call(request, writes=False, login=True)
        services = self._require_services()
        chat, identity = request.query.get("chat", "dm"), request.query.get("as", "owner")
        if chat not in ("dm", "group") or identity not in ("owner", "admin", "member"):
            return web.json_response(
                {"error": "chat is dm or group; as is owner, admin or member"}, status=400
            )
        chat_id, _ = chat_of(chat, identity)
        async with services.db.read() as tx:
            conversation = await conversations.by_chat(tx, PLATFORM, chat_id)
            if conversation is None:
                return web.json_response({"messages": []})
            events = (
                await tx.scalars(
                    select(InboundEvent)
                    .where(
                        InboundEvent.platform == PLATFORM,
                        InboundEvent.chat_id == chat_id,
                        InboundEvent.event_type == "message",  # not its clicks
                    )
                    .order_by(InboundEvent.id)
                )
            ).all()
            replies = await outbox.by_conversation(tx, conversation.id, limit=1000)
            cards = await progress_cards.of_conversation(tx, conversation.id)
        return web.json_response({"messages": view.conversation(events, replies, cards)})

    def _check_call(self, request: web.Request, *, writes: bool, login: bool = False) -> None:
        self.guard.check_host(request)
        self.guard.check_same_origin(request)
        if writes:
            self.guard.check_json(request)
        if login:
            self.guard.check_login(request)

    def _require_services(self) -> ChannelServices:
        if self.services is None:
            raise web.HTTPServiceUnavailable(text="starting")
        return self.services


# img-src data: for the page's empty icon (without one the browser asks for /favicon.ico: a 404).
_CSP = "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"


async def _read(request: web.Request, model: type[M]) -> M:
    """The body through the one bounded JSON reader (bot/web/json_body.py: nesting, numbers,
    NUL and lone surrogates, size), then the model; each refusal a 400 with one JSON line."""
    data = await read_json_object(request)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise bad_request(_brief_error(exc)) from None


def _brief_error(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors()
    )
