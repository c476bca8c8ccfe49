"""`POST /feishu/events`: verify, store, ack. Messages go to ingest; reactions are stored
(bot/channels/reactions.py) and start nothing; recalls take the message back out of search,
memory and the inbox (bot/channels/recalls.py); card callbacks (`card.action.trigger`, a click
on one of our buttons) go to ingest as clicks and are answered with a toast at once, the work
done by the Bot after (bot/channels/feishu/card_action.py).

Status codes are chosen for Feishu's retry behaviour: 200 for anything stored or deliberately
ignored (an unknown event type is logged, never 500, or Feishu retries it for hours); 401 for
forged, replayed or unauthenticated requests; 400 for bodies that are not usable events
(including anything that fails unexpectedly while reading them); 503 when we cannot store
right now, so Feishu delivers again later and nothing is lost. Every refusal is one log line,
and every answer, whatever it is, is counted.
"""

from __future__ import annotations

import logging
import reprlib
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from prometheus_client import Counter

from bot.channels.clicks import InboundClick
from bot.channels.feishu.card_action import (
    CARD_ACTION_EVENT,
    PLATFORM,
    RECEIVED,
    NotAClick,
    click_ids,
    normalize_click,
    toast,
)
from bot.channels.feishu.envelope import EnvelopeOpener, Unauthorized
from bot.channels.feishu.normalize import MESSAGE_EVENT, NotAMessage, normalize
from bot.channels.feishu.reaction_event import REACTION_EVENT, NotAReaction, normalize_reaction
from bot.channels.feishu.recall_event import RECALL_EVENT, NotARecall, normalize_recall
from bot.channels.ingest import Ingest, Outcome
from bot.channels.reactions import store_reaction
from bot.web.json_body import UnusableJson
from storage.types import utcnow

log = logging.getLogger(__name__)

WEBHOOK = Counter("maka_feishu_webhook_requests_total", "Webhook requests by answer", ["status"])
MAX_REASON = 200  # characters of an exception's text in a log line or an answer

BotOpenId = Callable[[], Awaitable[str | None]]


class FeishuWebhook:
    def __init__(self, opener: EnvelopeOpener, ingest: Ingest, bot_open_id: BotOpenId) -> None:
        self.opener = opener
        self.ingest = ingest
        self.bot_open_id = bot_open_id

    async def handle(self, request: web.Request) -> web.Response:
        try:
            response = await self._handle(request)
        except Exception as exc:  # a bug of ours, not the request's: answered and counted
            log.exception("webhook request from %s failed: %s", request.remote, reason(exc))
            response = web.json_response({"msg": "internal error"}, status=500)
        WEBHOOK.labels(str(response.status)).inc()
        return response

    async def _handle(self, request: web.Request) -> web.Response:
        try:
            raw = await request.read()
        except web.HTTPException as exc:  # e.g. 413: larger than the server takes
            log.warning("refused webhook request from %s: %s", request.remote, exc.reason)
            return web.json_response({"msg": exc.reason}, status=exc.status)
        except Exception as exc:  # the client went away mid-body, or sent a broken one
            return _bad_request(request, "unreadable body", exc)
        try:
            envelope = self.opener.open(raw, request.headers)
        except Unauthorized as exc:
            log.warning("refused webhook request from %s: %s", request.remote, exc)
            return web.json_response({"msg": "unauthorized"}, status=401)
        except Exception as exc:  # Malformed, or anything else a body made us trip over
            return _bad_request(request, "bad request", exc)

        if envelope.is_url_verification:
            return web.json_response({"challenge": envelope.body.get("challenge", "")})
        if envelope.event_type == REACTION_EVENT:
            return await self._reaction(request, envelope.body)
        if envelope.event_type == CARD_ACTION_EVENT:
            return await self._click(request, envelope.body)
        if envelope.event_type == RECALL_EVENT:
            return await self._recall(request, envelope.body)
        if envelope.event_type != MESSAGE_EVENT:
            log.info("ignored Feishu event type %s", reprlib.repr(envelope.event_type))
            return web.json_response({"msg": "ignored"})

        bot_open_id = await self.bot_open_id()
        if bot_open_id is None:  # cannot tell @mentions apart yet: let Feishu retry
            return web.json_response({"msg": "not ready"}, status=503)
        try:
            message = normalize(envelope.body, bot_open_id=bot_open_id)
        except Exception as exc:  # NotAMessage, or anything else the event made us trip over
            return _bad_request(request, "bad event", exc)
        try:
            result = await self.ingest.accept(message)
        except Exception as exc:  # the database, or a bug: Feishu delivers it again later
            log.error("could not store message %s: %s", message.message_id, reason(exc))
            return web.json_response({"msg": "try again"}, status=503)
        return web.json_response({"msg": "success", "outcome": result.outcome.value})

    async def _reaction(self, request: web.Request, body: dict[str, Any]) -> web.Response:
        """Stored, never answered (bot/channels/reactions.py)."""
        try:
            reaction = normalize_reaction(body, received=utcnow())
        except Exception as exc:  # NotAReaction, or anything else the event made us trip over
            return _bad_request(request, "bad event", exc)
        try:
            new = await store_reaction(self.ingest.db, reaction)
        except Exception as exc:  # the database: Feishu delivers it again later
            log.error("could not store reaction %s: %s", reaction.event_id, reason(exc))
            return web.json_response({"msg": "try again"}, status=503)
        return web.json_response({"msg": "success", "outcome": "stored" if new else "duplicate"})

    async def _recall(self, request: web.Request, body: dict[str, Any]) -> web.Response:
        """Stored once: the message leaves search, memory and the inbox (channels/recalls.py)."""
        try:
            recall = normalize_recall(body, received=utcnow())
        except Exception as exc:  # NotARecall, or anything else the event made us trip over
            return _bad_request(request, "bad event", exc)
        try:
            result = await self.ingest.recall(recall)
        except Exception as exc:  # the database: Feishu delivers it again later
            log.error("could not store recall of %s: %s", recall.message_id, reason(exc))
            return web.json_response({"msg": "try again"}, status=503)
        return web.json_response(
            {"msg": "success", "outcome": "recalled" if result.new else "duplicate"}
        )

    async def _click(self, request: web.Request, body: dict[str, Any]) -> web.Response:
        """Stored once and handed to the Bot; answered with a toast within Feishu's 3 s."""
        try:
            chat_id, _ = click_ids(body)
        except Exception as exc:  # NotAClick, or anything else the callback made us trip over
            return _bad_request(request, "bad card callback", exc)
        try:
            chat_type = await self.ingest.chat_type_of(PLATFORM, chat_id)
        except Exception as exc:  # the database: Feishu delivers it again later
            log.error("could not look up chat %s for a click: %s", chat_id, reason(exc))
            return web.json_response({"msg": "try again"}, status=503)
        try:
            click = read_click(body, chat_id, chat_type)
        except Exception as exc:  # NotAClick, or anything else the callback made us trip over
            return _bad_request(request, "bad card callback", exc)
        try:
            result = await self.ingest.accept_click(click)
        except Exception as exc:  # the database: Feishu delivers it again later
            log.error("could not store click %s: %s", click.click_id, reason(exc))
            return web.json_response({"msg": "try again"}, status=503)
        return web.json_response(click_answer(result.outcome))


def read_click(body: dict[str, Any], chat_id: str, chat_type: str | None) -> InboundClick:
    """The callback as a click; NotAClick if it is not one on a card of ours (`chat_type`:
    the chat's, None when we never wrote there)."""
    if chat_type is None:
        raise NotAClick(f"a click in chat {reprlib.repr(chat_id)}, where no card of ours went")
    return normalize_click(body, chat_type=chat_type)


def click_answer(outcome: Outcome) -> dict[str, Any]:
    if outcome is Outcome.STALE:
        return toast("This card is too old to act on", "warning")
    return toast(RECEIVED)


def _bad_request(request: web.Request, what: str, exc: Exception) -> web.Response:
    log.warning("refused webhook request from %s, %s: %s", request.remote, what, reason(exc))
    return web.json_response({"msg": f"{what}: {reason(exc)}"}, status=400)


def reason(exc: BaseException) -> str:
    """An exception in one short line: its own text for ours, with its type for the rest."""
    # Malformed is UnusableJson too
    ours = isinstance(exc, UnusableJson | NotAMessage | NotAReaction | NotARecall | NotAClick)
    text = str(exc) if ours else f"{type(exc).__name__}: {exc}"
    text = " ".join(text.split())
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 1] + "…"
