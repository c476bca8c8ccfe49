"""Progress cards on Feishu, through CardKit (open.feishu.cn/document/cardkit-v1/...).

The first push creates a card entity (`POST /open-apis/cardkit/v1/cards`, card JSON 2.0,
streaming mode on while the work goes on) and sends it as a message whose content names the
card (`{"type":"card","data":{"card_id":...}}`), with a uuid derived from the card's key so a
resend is not a second message. Later pushes update the steps element's content
(`PUT .../cards/:card_id/elements/:element_id/content`) with a strictly increasing
`sequence`; a card that ends has its streaming mode closed explicitly
(`PATCH .../cards/:card_id/settings`). Feishu closes streaming by itself 10 minutes after it
was opened, and element updates then fail: a card still going after STREAMING_FOR (a long
Matter) has streaming closed by us first, and is updated whole from then on
(`PUT .../cards/:card_id`, streaming off). Each step is stored as it is made (the card id,
the message id), so a push cut short never makes a second card.
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from typing import Any

from bot.channels.feishu.api import FeishuApi, FeishuApiError, FeishuUnreachable
from bot.channels.feishu.sender import REPLY_TARGET_GONE
from bot.channels.progress_sender import MAX_FAILURES, ClaimedCard, ProgressSender
from bot.host.notify import Notifier
from sources.feishu.sdk import (
    CardKitCard,
    ContentCardElementRequest,
    ContentCardElementRequestBody,
    CreateCardRequest,
    CreateCardRequestBody,
    CreateMessageRequest,
    CreateMessageRequestBody,
    ReplyMessageRequest,
    ReplyMessageRequestBody,
    SettingsCardRequest,
    SettingsCardRequestBody,
    UpdateCardRequest,
    UpdateCardRequestBody,
)
from storage.db import Database
from storage.types import utcnow

PLATFORM = "feishu"
ELEMENT = "steps"
# Feishu ends streaming mode 10 minutes after it was opened; we close it before that.
STREAMING_FOR = timedelta(minutes=9)
SEQUENCE_NOT_INCREASING = 300317  # the card's sequence must grow with every update
STREAMING_CLOSED = 300309  # an element update after streaming mode was closed
SEQUENCE_JUMP = 1000  # past any sequence a push cut short may have used
_TEMPLATE = {"working": "blue", "done": "green", "failed": "red", "interrupted": "grey"}


def steps_markdown(steps: list[str]) -> str:
    return "\n".join(f"- {step}" for step in steps) or "- working"


def card_json(card: ClaimedCard, *, streaming: bool) -> dict[str, Any]:
    """The card, JSON 2.0: a header with the title and the status, the steps as markdown."""
    return {
        "schema": "2.0",
        "config": {
            "streaming_mode": streaming,
            "update_multi": True,  # required for CardKit updates
            "summary": {"content": f"{card.title}: {card.status}"},
        },
        "header": {
            "title": {"tag": "plain_text", "content": card.title},
            "subtitle": {"tag": "plain_text", "content": card.status},
            "template": _TEMPLATE.get(card.status, "blue"),
        },
        "body": {
            "elements": [
                {"tag": "markdown", "element_id": ELEMENT, "content": steps_markdown(card.steps)}
            ]
        },
    }


def message_uuid(key: str) -> str:
    """Feishu's uuid (at most 50 characters) for the card's one message."""
    return "p" + hashlib.sha256(f"progress:{key}".encode()).hexdigest()[:39]


class FeishuProgressSender(ProgressSender):
    name = "feishu-progress"
    platform = PLATFORM

    def __init__(self, db: Database, notifier: Notifier, api: FeishuApi, instance_id: str) -> None:
        super().__init__(db, notifier, instance_id)
        self.api = api

    async def push(self, card: ClaimedCard) -> None:
        sequence, closed = card.sequence, card.streaming_closed
        try:
            if card.card_id is None:
                await self._first(card)
                return
            if card.message_id is None:  # made, never sent (a push cut short)
                message_id = await self._send(card, card.card_id)
                await self.record(card, message_id=message_id)
            now = utcnow()
            since = card.streaming_since
            streaming = not closed and since is not None and now - since < STREAMING_FOR
            if streaming:
                sequence += 1
                await self._content(card.card_id, steps_markdown(card.steps), sequence)
            elif not closed:
                sequence += 1
                await self._close_streaming(card.card_id, sequence)
                closed = True
            if not streaming:
                sequence += 1
                await self._update(card.card_id, card_json(card, streaming=False), sequence)
            elif card.final:
                sequence += 1
                await self._close_streaming(card.card_id, sequence)
                closed = True
        except FeishuApiError as exc:
            await self._refused(card, exc, sequence, closed)
            return
        except FeishuUnreachable as exc:
            await self.failed(card, str(exc), sequence=sequence, streaming_closed=closed)
            return
        await self.pushed(card, sequence=sequence, streaming_closed=closed)

    async def _first(self, card: ClaimedCard) -> None:
        """Create the card showing the state as it is now, and send it."""
        streaming = not card.final
        card_id = await self._create(card_json(card, streaming=streaming))
        made = {
            "card_id": card_id,
            "element_id": ELEMENT,
            "streaming_since": utcnow() if streaming else None,
            "streaming_closed": not streaming,
        }
        await self.record(card, **made)
        message_id = await self._send(card, card_id)
        await self.pushed(card, message_id=message_id, **made)

    async def _refused(
        self, card: ClaimedCard, exc: FeishuApiError, sequence: int, closed: bool
    ) -> None:
        if exc.code == SEQUENCE_NOT_INCREASING and card.failures + 1 < MAX_FAILURES:
            # A push cut short used numbers we never stored: jump past them.
            await self.again(card, str(exc), sequence=sequence + SEQUENCE_JUMP)
        elif exc.code == STREAMING_CLOSED and not closed:
            await self.again(card, str(exc), sequence=sequence, streaming_closed=True)
        elif exc.retryable:
            await self.failed(card, str(exc), sequence=sequence, streaming_closed=closed)
        else:  # refused for good (no permission, card too large...): never retried
            await self.give_up(card, str(exc))

    # ---- the calls -----------------------------------------------------------------------

    async def _create(self, card: dict[str, Any]) -> str:
        body = (
            CreateCardRequestBody.builder()
            .type("card_json")
            .data(json.dumps(card, ensure_ascii=False))
            .build()
        )
        request = CreateCardRequest.builder().request_body(body).build()
        resp = await self.api.call("cardkit.card.create", lambda o: self.api.send(request, o))
        card_id = str(resp.data.get("card_id") or "")
        if not card_id:
            raise FeishuApiError("cardkit.card.create", code=None, msg="answer has no card_id")
        return card_id

    async def _send(self, card: ClaimedCard, card_id: str) -> str:
        content = json.dumps({"type": "card", "data": {"card_id": card_id}})
        uuid = message_uuid(card.key)
        if card.reply_to:
            try:
                return await self._reply(card.reply_to, content, uuid)
            except FeishuApiError as exc:
                if exc.code not in REPLY_TARGET_GONE:
                    raise
        body = (
            CreateMessageRequestBody.builder()
            .receive_id(card.chat_id)
            .msg_type("interactive")
            .content(content)
            .uuid(uuid)
            .build()
        )
        request = CreateMessageRequest.builder().receive_id_type("chat_id").request_body(body)
        built = request.build()
        resp = await self.api.call("im.message.create", lambda o: self.api.send(built, o))
        return str(resp.data.get("message_id") or "")

    async def _reply(self, message_id: str, content: str, uuid: str) -> str:
        body = (
            ReplyMessageRequestBody.builder()
            .msg_type("interactive")
            .content(content)
            .uuid(uuid)
            .build()
        )
        request = ReplyMessageRequest.builder().message_id(message_id).request_body(body).build()
        resp = await self.api.call("im.message.reply", lambda o: self.api.send(request, o))
        return str(resp.data.get("message_id") or "")

    async def _content(self, card_id: str, text: str, sequence: int) -> None:
        body = (
            ContentCardElementRequestBody.builder()
            .content(text)
            .sequence(sequence)
            .uuid(f"{card_id}-{sequence}")
            .build()
        )
        request = (
            ContentCardElementRequest.builder()
            .card_id(card_id)
            .element_id(ELEMENT)
            .request_body(body)
            .build()
        )
        await self.api.call("cardkit.element.content", lambda o: self.api.send(request, o))

    async def _close_streaming(self, card_id: str, sequence: int) -> None:
        settings = json.dumps({"config": {"streaming_mode": False}})
        body = (
            SettingsCardRequestBody.builder()
            .settings(settings)
            .sequence(sequence)
            .uuid(f"{card_id}-{sequence}")
            .build()
        )
        request = SettingsCardRequest.builder().card_id(card_id).request_body(body).build()
        await self.api.call("cardkit.card.settings", lambda o: self.api.send(request, o))

    async def _update(self, card_id: str, card: dict[str, Any], sequence: int) -> None:
        whole = CardKitCard.builder().type("card_json").data(json.dumps(card)).build()
        body = (
            UpdateCardRequestBody.builder()
            .card(whole)
            .sequence(sequence)
            .uuid(f"{card_id}-{sequence}")
            .build()
        )
        request = UpdateCardRequest.builder().card_id(card_id).request_body(body).build()
        await self.api.call("cardkit.card.update", lambda o: self.api.send(request, o))
