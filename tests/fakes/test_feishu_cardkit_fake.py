"""Self-tests of the fake's CardKit endpoints through the REAL lark-oapi SDK: a card made,
sent as a message, streamed, closed and updated whole; the documented refusals (a sequence
not increasing, streaming closed at 10 minutes, more than 10 updates a second, a card JSON
over 30 KB, a message naming an unknown card)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import lark_oapi as lark
import pytest
from lark_oapi.api.cardkit.v1 import (
    Card,
    ContentCardElementRequest,
    ContentCardElementRequestBody,
    CreateCardRequest,
    CreateCardRequestBody,
    SettingsCardRequest,
    SettingsCardRequestBody,
    UpdateCardRequest,
    UpdateCardRequestBody,
)
from lark_oapi.api.im.v1 import CreateMessageRequest, CreateMessageRequestBody

from .feishu import FeishuFake
from .test_feishu_fake import sdk


@pytest.fixture
async def fake() -> AsyncIterator[FeishuFake]:
    async with FeishuFake() as f:
        f.add_chat("oc_group", name="Team")
        yield f


def card_json(text: str, *, streaming: bool = True, pad: int = 0) -> str:
    return json.dumps(
        {
            "schema": "2.0",
            "config": {"streaming_mode": streaming, "update_multi": True},
            "header": {"title": {"tag": "plain_text", "content": "Working"}},
            "body": {"elements": [{"tag": "markdown", "element_id": "steps", "content": text}]},
            "pad": "x" * pad,
        }
    )


async def call(client: lark.Client, method: Any, request: Any) -> Any:
    return await asyncio.to_thread(method, request)


async def make_card(client: lark.Client, data: str) -> Any:
    body = CreateCardRequestBody.builder().type("card_json").data(data).build()
    request = CreateCardRequest.builder().request_body(body).build()
    return await call(client, client.cardkit.v1.card.create, request)


async def content(client: lark.Client, card_id: str, text: str, sequence: int) -> Any:
    body = ContentCardElementRequestBody.builder().content(text).sequence(sequence).build()
    request = (
        ContentCardElementRequest.builder()
        .card_id(card_id)
        .element_id("steps")
        .request_body(body)
        .build()
    )
    return await call(client, client.cardkit.v1.card_element.content, request)


async def test_a_card_is_made_sent_streamed_closed_and_updated_whole(fake: FeishuFake) -> None:
    client, _, _ = sdk(fake)
    made = await make_card(client, card_json("- searching memory"))
    assert made.success(), made.msg
    card_id = made.data.card_id
    message = (
        CreateMessageRequestBody.builder()
        .receive_id("oc_group")
        .msg_type("interactive")
        .content(json.dumps({"type": "card", "data": {"card_id": card_id}}))
        .build()
    )
    request = CreateMessageRequest.builder().receive_id_type("chat_id").request_body(message)
    sent = await call(client, client.im.v1.message.create, request.build())
    assert sent.success(), sent.msg
    assert fake.card_of_message(fake.sent[0].content) is fake.cards[card_id]

    assert (await content(client, card_id, "- searching memory\n- done", 1)).success()
    settings = (
        SettingsCardRequestBody.builder()
        .settings(json.dumps({"config": {"streaming_mode": False}}))
        .sequence(2)
        .build()
    )
    closed = await call(
        client,
        client.cardkit.v1.card.settings,
        SettingsCardRequest.builder().card_id(card_id).request_body(settings).build(),
    )
    assert closed.success(), closed.msg
    after_close = await content(client, card_id, "too late", 3)
    assert after_close.code == 300309, "element updates need streaming mode on"
    whole = Card.builder().type("card_json").data(card_json("- all", streaming=False)).build()
    updated = await call(
        client,
        client.cardkit.v1.card.update,
        UpdateCardRequest.builder()
        .card_id(card_id)
        .request_body(UpdateCardRequestBody.builder().card(whole).sequence(3).build())
        .build(),
    )
    assert updated.success(), updated.msg
    card = fake.cards[card_id]
    assert card.text == "- all" and not card.streaming
    assert card.pushes == [("content", 1), ("settings", 2), ("update", 3)]


async def test_documented_refusals(fake: FeishuFake) -> None:
    client, _, _ = sdk(fake)
    card_id = (await make_card(client, card_json("- a"))).data.card_id
    assert (await content(client, card_id, "- a\n- b", 5)).success()
    again = await content(client, card_id, "- a\n- b\n- c", 5)
    assert (again.code, again.raw.status_code) == (300317, 400)
    assert "sequence number compare failed" in again.msg

    fake.advance(2)  # a new second: 10 updates of this card are allowed in it
    burst = [await content(client, card_id, f"- {n}", 10 + n) for n in range(11)]
    assert [r.code for r in burst[:10]] == [0] * 10
    assert (burst[10].code, burst[10].raw.status_code) == (99991400, 429)

    fake.advance(601)  # Feishu ends streaming 10 minutes after it was opened
    late = await content(client, card_id, "- late", 100)
    assert late.code == 300309 and not fake.cards[card_id].streaming

    too_large = await make_card(client, card_json("- a", pad=31 * 1024))
    assert not too_large.success() and too_large.raw.status_code == 400

    unknown = (
        CreateMessageRequestBody.builder()
        .receive_id("oc_group")
        .msg_type("interactive")
        .content(json.dumps({"type": "card", "data": {"card_id": "7nope"}}))
        .build()
    )
    request = CreateMessageRequest.builder().receive_id_type("chat_id").request_body(unknown)
    refused = await call(client, client.im.v1.message.create, request.build())
    assert refused.code == 230099 and fake.sent == []
