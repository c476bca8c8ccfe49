"""`POST /feishu/events`: verify, store, ack.

Status codes are chosen for Feishu's retry behaviour: 200 for anything stored or deliberately
ignored (an unknown event type is logged, never 500, or Feishu retries it for hours); 401 for
forged, replayed or unauthenticated requests; 400 for bodies that are not events; 503 when
we cannot store right now, so Feishu delivers again later and nothing is lost.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aiohttp import web
from prometheus_client import Counter
from sqlalchemy.exc import SQLAlchemyError

from bot.channels.feishu.envelope import EnvelopeOpener, Malformed, Unauthorized
from bot.channels.feishu.normalize import NotAMessage, normalize
from bot.channels.ingest import Ingest

log = logging.getLogger(__name__)

MESSAGE_EVENT = "im.message.receive_v1"
WEBHOOK = Counter("maka_feishu_webhook_requests_total", "Webhook requests by answer", ["status"])

BotOpenId = Callable[[], Awaitable[str | None]]


class FeishuWebhook:
    def __init__(self, opener: EnvelopeOpener, ingest: Ingest, bot_open_id: BotOpenId) -> None:
        self.opener = opener
        self.ingest = ingest
        self.bot_open_id = bot_open_id

    async def handle(self, request: web.Request) -> web.Response:
        response = await self._handle(request)
        WEBHOOK.labels(str(response.status)).inc()
        return response

    async def _handle(self, request: web.Request) -> web.Response:
        raw = await request.read()
        try:
            envelope = self.opener.open(raw, request.headers)
        except Unauthorized as exc:
            log.warning("refused webhook request from %s: %s", request.remote, exc)
            return web.json_response({"msg": "unauthorized"}, status=401)
        except Malformed as exc:
            return web.json_response({"msg": f"bad request: {exc}"}, status=400)

        if envelope.is_url_verification:
            return web.json_response({"challenge": envelope.body.get("challenge", "")})
        if envelope.event_type != MESSAGE_EVENT:
            log.info("ignored Feishu event type %r", envelope.event_type)
            return web.json_response({"msg": "ignored"})

        bot_open_id = await self.bot_open_id()
        if bot_open_id is None:  # cannot tell @mentions apart yet: let Feishu retry
            return web.json_response({"msg": "not ready"}, status=503)
        try:
            message = normalize(envelope.body, bot_open_id=bot_open_id)
        except (NotAMessage, ValueError, TypeError) as exc:
            return web.json_response({"msg": f"bad event: {exc}"}, status=400)
        try:
            result = await self.ingest.accept(message)
        except (SQLAlchemyError, OSError) as exc:
            log.error("could not store message %s: %s", message.message_id, exc)
            return web.json_response({"msg": "try again"}, status=503)
        return web.json_response({"msg": "success", "outcome": result.outcome.value})
