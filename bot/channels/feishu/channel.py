"""The Feishu channel assembled: webhook or long connection in, sender out, API usage counted."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from aiohttp import web

from bot.channels.api_usage import ApiUsageCounter
from bot.channels.feishu.api import FeishuApi
from bot.channels.feishu.attachments import FeishuAttachmentFetcher
from bot.channels.feishu.envelope import EnvelopeOpener
from bot.channels.feishu.lookup import FeishuMessageLookup
from bot.channels.feishu.progress import FeishuProgressSender
from bot.channels.feishu.sender import FeishuSender
from bot.channels.feishu.webhook import FeishuWebhook
from bot.channels.feishu.ws import FeishuLongConnection
from bot.channels.services import ChannelServices
from bot.config import FeishuMode, Role, Settings, reveal

log = logging.getLogger(__name__)

PLATFORM = "feishu"
BOT_INFO_TIMEOUT = 5.0
BOT_INFO_RETRY = 10.0
# How long a webhook request waits for the open_id before answering 503: well inside the
# 3 s Feishu gives a push before it counts it failed and delivers it again.
BOT_INFO_WAIT = 1.5


class FeishuChannel:
    def __init__(self, settings: Settings, role: Role) -> None:
        assert settings.feishu_app_id and settings.feishu_app_secret
        self.settings = settings
        self.role = role
        self.api: FeishuApi | None = None
        self.usage: ApiUsageCounter | None = None
        self.webhook: FeishuWebhook | None = None
        self.long_connection: FeishuLongConnection | None = None
        self._bot_open_id: str | None = None
        self._bot_info_fetch: asyncio.Task[None] | None = None  # the one fetch in flight
        self._bot_info_task: asyncio.Task[None] | None = None

    @property
    def receives(self) -> bool:
        return self.role in (Role.WEB, Role.ALL)

    def add_routes(self, app: web.Application) -> None:
        if self.receives and self.settings.feishu_mode is FeishuMode.WEBHOOK:
            app.router.add_post("/feishu/events", self._handle_webhook)

    async def _handle_webhook(self, request: web.Request) -> web.Response:
        if self.webhook is None:
            return web.json_response({"msg": "starting"}, status=503)
        return await self.webhook.handle(request)

    async def start(self, services: ChannelServices) -> None:
        s = self.settings
        assert s.feishu_app_id and s.feishu_app_secret
        self.usage = ApiUsageCounter(services.db, PLATFORM, s.tz)
        self.api = FeishuApi(
            app_id=s.feishu_app_id,
            app_secret=s.feishu_app_secret.get_secret_value(),
            domain=s.feishu_domain,
            usage=self.usage,
        )
        self._bot_info_task = asyncio.create_task(self._learn_bot_open_id(), name="feishu-bot")
        if self.receives:
            self.webhook = FeishuWebhook(
                EnvelopeOpener(reveal(s.feishu_encrypt_key), reveal(s.feishu_verification_token)),
                services.ingest,
                self.bot_open_id,
            )
            if s.feishu_mode is FeishuMode.WS:
                self.long_connection = FeishuLongConnection(
                    app_id=s.feishu_app_id,
                    app_secret=s.feishu_app_secret.get_secret_value(),
                    domain=s.feishu_domain,
                    ingest=services.ingest,
                    bot_open_id=lambda: self._bot_open_id,
                )
                self.long_connection.start()
        if services.runs_workers:
            services.host.add(
                FeishuSender(
                    services.db,
                    services.notifier,
                    self.api,
                    instance_id=services.host.instance_id,
                    owner_open_id=s.owner,
                    concurrency=s.bot_concurrency,
                )
            )
            services.host.add(
                FeishuAttachmentFetcher(
                    services.db, services.notifier, self.api, s, services.host.instance_id
                )
            )
            if s.progress_cards:
                services.host.add(
                    FeishuProgressSender(
                        services.db, services.notifier, self.api, services.host.instance_id
                    )
                )
        services.readiness["feishu"] = self.readiness
        services.lookups[PLATFORM] = FeishuMessageLookup(self.api)  # quotes, forwards

    async def bot_open_id(self) -> str | None:
        """The bot's own open_id (how @mentions of it are recognised), fetched once. While it
        is unknown, every caller shares one fetch and waits for it at most BOT_INFO_WAIT: a
        Feishu outage costs a webhook request 1.5 s and a 503, not a queue of 5 s fetches."""
        if self._bot_open_id is not None or self.api is None:
            return self._bot_open_id
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._fetch_in_flight()), BOT_INFO_WAIT)
        return self._bot_open_id

    def _fetch_in_flight(self) -> asyncio.Task[None]:
        """The one fetch of the open_id under way, started if there is none."""
        if self._bot_info_fetch is None or self._bot_info_fetch.done():
            self._bot_info_fetch = asyncio.create_task(self._fetch_bot_open_id())
        return self._bot_info_fetch

    async def _fetch_bot_open_id(self) -> None:
        assert self.api is not None
        try:
            async with asyncio.timeout(BOT_INFO_TIMEOUT):
                self._bot_open_id = (await self.api.bot_info()).open_id
            log.info("Feishu bot open_id is %s", self._bot_open_id)
        except Exception as exc:
            log.warning("cannot get the bot's open_id yet: %s", exc)

    async def _learn_bot_open_id(self) -> None:
        while self._bot_open_id is None:
            await self._fetch_in_flight()  # never raises: failures are logged
            if self._bot_open_id is None:
                await asyncio.sleep(BOT_INFO_RETRY)

    async def readiness(self) -> str | None:
        if self._bot_open_id is None:
            return "bot open_id not known yet (GET /open-apis/bot/v3/info failing)"
        if self.long_connection is not None and not self.long_connection.connected:
            return "long connection down (reconnecting)"
        return None

    async def stop(self) -> None:
        if self._bot_info_task is not None:
            self._bot_info_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._bot_info_task
        if self._bot_info_fetch is not None:
            self._bot_info_fetch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._bot_info_fetch
        if self.long_connection is not None:
            await self.long_connection.stop()
        if self.api is not None:  # after the Host's drain: no send is in flight any more
            await self.api.aclose()
        if self.usage is not None:
            await self.usage.aclose()
