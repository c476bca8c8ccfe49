"""CardKit endpoints of the Feishu fake: card entities, streaming updates, settings.

Shapes and rules from the CardKit docs (open.feishu.cn/document/cardkit-v1/...):
- `card/create` (POST /open-apis/cardkit/v1/cards): body `{"type": "card_json", "data":
  "<card JSON 2.0 as a string>"}`, answers `data.card_id`. The card JSON is limited to
  30 KB like a card message ("卡片 JSON ... 30 KB", feishu-cards/card-json-v2-structure).
- `card-element/content` (PUT .../cards/:card_id/elements/:element_id/content): full text of
  a markdown/plain_text element, `sequence` required; only while the card's streaming mode
  is on ("调用该接口时，需确保已开启卡片的流式更新模式"); rate "1000 次/分钟、50 次/秒" per
  app, and per card at most 10 updates a second (streaming-updates-openapi-overview).
- `card/settings` (PATCH .../cards/:card_id/settings): body `{"settings": "<JSON string>",
  "sequence": n}`; `config.streaming_mode: false` closes streaming.
- `card/update` (PUT .../cards/:card_id): body `{"card": {"type": "card_json", "data":
  "..."}, "sequence": n}`, the whole card replaced.
- Every operation on one card carries a `sequence` strictly greater than the last one
  (1~2147483647); otherwise code 300317 "ErrMsg: sequence number compare failed;" (the
  streaming-update guide; the message as real answers spell it, e.g. LangBot #1870).
- Streaming mode closes by itself 10 minutes after it was opened
  (streaming-updates-openapi-overview: "流式更新模式...10 分钟后自动关闭"); an element
  update then fails (code STREAMING_CLOSED below).
- A message whose content is `{"type": "card", "data": {"card_id": ...}}` (msg_type
  interactive) shows the entity; an unknown card_id is refused like invalid card content.

Codes we could not read in a doc's error table are marked "(assumed)": the client treats
them as refusals, so their exact value only matters for the branch it takes.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from .feishu_models import CARD_INVALID, RATE_LIMITED, FeishuApiError, JSONDict, new_id

SEQUENCE_COMPARE_FAILED = (300317, "ErrMsg: sequence number compare failed; ")
STREAMING_CLOSED = (300309, "ErrMsg: streaming mode is closed; ")  # (assumed)
ELEMENT_NOT_FOUND = (300313, "ErrMsg: not find elementID ")  # as real answers spell it
CARD_NOT_FOUND = (300311, "ErrMsg: card not found; ")  # (assumed)
CARD_TOO_LARGE = (300305, "ErrMsg: card json size exceeds the limit; ")  # (assumed)
CARD_JSON_INVALID = (300303, "ErrMsg: card json is invalid; ")  # (assumed)
CARD_LIMIT_BYTES = 30 * 1024
STREAMING_SECONDS = 600
CARD_UPDATES_PER_SECOND = 10
SEQUENCE_MAX = 2_147_483_647


@dataclass
class FakeCard:
    """A card entity as the fake holds it; `pushes` records every accepted operation."""

    card_id: str
    app_id: str
    data: JSONDict
    streaming: bool
    streaming_opened_at: float | None
    sequence: int = 0
    pushes: list[tuple[str, int]] = field(default_factory=list)  # (operation, sequence)
    times: deque[float] = field(default_factory=deque)

    def elements(self) -> list[JSONDict]:
        body = self.data.get("body") or {}
        return [e for e in body.get("elements") or [] if isinstance(e, dict)]

    def element(self, element_id: str) -> JSONDict | None:
        return next((e for e in self.elements() if e.get("element_id") == element_id), None)

    @property
    def text(self) -> str:
        """Every markdown / plain_text element's content, joined (what a person reads)."""
        return "\n".join(str(e.get("content", "")) for e in self.elements())

    @property
    def title(self) -> str:
        header = self.data.get("header") or {}
        return str((header.get("title") or {}).get("content", ""))


def _parse_card(data: object) -> JSONDict:
    if not isinstance(data, str):
        raise FeishuApiError(CARD_JSON_INVALID, detail="data must be a string")
    if len(data.encode()) > CARD_LIMIT_BYTES:
        raise FeishuApiError(CARD_TOO_LARGE)
    try:
        card = json.loads(data)
    except ValueError:
        raise FeishuApiError(CARD_JSON_INVALID) from None
    if not isinstance(card, dict) or card.get("schema") != "2.0":
        raise FeishuApiError(CARD_JSON_INVALID, detail="schema 2.0 is required")
    return card


class CardKitHandlers:
    """Mixin for FeishuFake: card entities and their updates."""

    def __init__(self) -> None:
        self.cards: dict[str, FakeCard] = {}
        self.refuse_card_create = False  # answer card creation with an error, for tests

    def now(self) -> float:
        raise NotImplementedError

    def authenticate(self, request: web.Request) -> str:
        raise NotImplementedError

    def add_cardkit_routes(self, app: web.Application) -> None:
        base = "/open-apis/cardkit/v1/cards"
        app.router.add_post(base, self._card_create)
        app.router.add_put(base + "/{card_id}", self._card_update)
        app.router.add_patch(base + "/{card_id}/settings", self._card_settings)
        app.router.add_put(
            base + "/{card_id}/elements/{element_id}/content", self._card_element_content
        )

    # ---- what tests read -------------------------------------------------------------------

    def card_of_message(self, content: str) -> FakeCard | None:
        """The card entity a sent message's content names, if any."""
        try:
            body = json.loads(content)
        except ValueError:
            return None
        if not isinstance(body, dict) or body.get("type") != "card":
            return None
        return self.cards.get(str((body.get("data") or {}).get("card_id")))

    def check_card_reference(self, app_id: str, content: str) -> None:
        """A card message names an entity this app made (called by the IM send path)."""
        try:
            body = json.loads(content)
        except ValueError:
            return
        if isinstance(body, dict) and body.get("type") == "card":
            card = self.cards.get(str((body.get("data") or {}).get("card_id")))
            if card is None or card.app_id != app_id:
                raise FeishuApiError(CARD_INVALID, detail="card_id not found")

    # ---- handlers --------------------------------------------------------------------------

    async def _body(self, request: web.Request) -> JSONDict:
        try:
            body = json.loads(await request.read())
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise FeishuApiError(CARD_JSON_INVALID, detail="body must be a JSON object")
        return body

    def _card(self, request: web.Request, app_id: str) -> FakeCard:
        card = self.cards.get(request.match_info["card_id"])
        if card is None or card.app_id != app_id:
            raise FeishuApiError(CARD_NOT_FOUND)
        now = self.now()
        if (
            card.streaming
            and card.streaming_opened_at is not None
            and now - card.streaming_opened_at >= STREAMING_SECONDS
        ):
            card.streaming = False  # closed by Feishu at the 10-minute mark
        return card

    def _next_sequence(self, card: FakeCard, body: JSONDict, operation: str) -> None:
        sequence = body.get("sequence")
        if not isinstance(sequence, int) or not 1 <= sequence <= SEQUENCE_MAX:
            raise FeishuApiError(SEQUENCE_COMPARE_FAILED)
        if sequence <= card.sequence:
            raise FeishuApiError(SEQUENCE_COMPARE_FAILED)
        now = self.now()
        while card.times and now - card.times[0] >= 1.0:
            card.times.popleft()
        if len(card.times) >= CARD_UPDATES_PER_SECOND:
            raise FeishuApiError(RATE_LIMITED, http_status=429, detail="card update limit")
        card.times.append(now)
        card.sequence = sequence
        card.pushes.append((operation, sequence))

    async def _card_create(self, request: web.Request) -> web.Response:
        app_id = self.authenticate(request)
        body = await self._body(request)
        if self.refuse_card_create:
            raise FeishuApiError(CARD_JSON_INVALID, detail="refused by the test")
        if body.get("type") != "card_json":
            raise FeishuApiError(CARD_JSON_INVALID, detail="type must be card_json")
        data = _parse_card(body.get("data"))
        streaming = bool((data.get("config") or {}).get("streaming_mode"))
        card_id = new_id("7", 9)
        self.cards[card_id] = FakeCard(
            card_id, app_id, data, streaming, self.now() if streaming else None
        )
        return web.json_response({"code": 0, "msg": "success", "data": {"card_id": card_id}})

    async def _card_element_content(self, request: web.Request) -> web.Response:
        app_id = self.authenticate(request)
        body = await self._body(request)
        card = self._card(request, app_id)
        element = card.element(request.match_info["element_id"])
        if element is None:
            raise FeishuApiError(ELEMENT_NOT_FOUND, detail=request.match_info["element_id"])
        if not card.streaming:
            raise FeishuApiError(STREAMING_CLOSED)
        if not isinstance(body.get("content"), str):
            raise FeishuApiError(CARD_JSON_INVALID, detail="content must be a string")
        self._next_sequence(card, body, "content")
        element["content"] = body["content"]
        return web.json_response({"code": 0, "msg": "success", "data": {}})

    async def _card_settings(self, request: web.Request) -> web.Response:
        app_id = self.authenticate(request)
        body = await self._body(request)
        card = self._card(request, app_id)
        try:
            settings: Any = json.loads(body.get("settings") or "")
        except (TypeError, ValueError):
            raise FeishuApiError(CARD_JSON_INVALID, detail="settings must be JSON") from None
        self._next_sequence(card, body, "settings")
        config = settings.get("config") if isinstance(settings, dict) else None
        if isinstance(config, dict) and "streaming_mode" in config:
            card.streaming = bool(config["streaming_mode"])
            card.streaming_opened_at = self.now() if card.streaming else None
            card.data.setdefault("config", {})["streaming_mode"] = card.streaming
        return web.json_response({"code": 0, "msg": "success", "data": {}})

    async def _card_update(self, request: web.Request) -> web.Response:
        app_id = self.authenticate(request)
        body = await self._body(request)
        card = self._card(request, app_id)
        whole = body.get("card")
        if not isinstance(whole, dict) or whole.get("type") != "card_json":
            raise FeishuApiError(CARD_JSON_INVALID, detail="card.type must be card_json")
        data = _parse_card(whole.get("data"))
        self._next_sequence(card, body, "update")
        card.data = data
        streaming = bool((data.get("config") or {}).get("streaming_mode"))
        if streaming and not card.streaming:
            card.streaming_opened_at = self.now()
        card.streaming = streaming
        return web.json_response({"code": 0, "msg": "success", "data": {}})
