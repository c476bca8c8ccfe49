"""Self-tests: the REAL lark-oapi SDK and plain aiohttp talk to the fake; events pass lark-oapi's
own decryption, signature check and typed parsing. If these break, the fake drifted from Feishu
(or from the SDK), not our code.

Sync SDK calls run in `asyncio.to_thread`: they use blocking `requests`, and the fake serves on
this test's event loop.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import httpx
import lark_oapi as lark
import pytest
import requests
from aiohttp import web
from lark_oapi.api.im.v1 import (
    CreateMessageRequest,
    CreateMessageRequestBody,
    CreateMessageResponse,
    GetMessageRequest,
    ListChatRequest,
    ListMessageRequest,
    P2ImMessageReceiveV1,
    PatchMessageRequest,
    PatchMessageRequestBody,
    ReplyMessageRequest,
    ReplyMessageRequestBody,
)
from lark_oapi.core.exception import ObtainAccessTokenException
from lark_oapi.core.utils import AESCipher
from multidict import CIMultiDict

from .feishu import FeishuEventSender, FeishuFake, HistoryMessage, Mention

TOKEN_PATH = "/open-apis/auth/v3/tenant_access_token/internal"
MESSAGES = "/open-apis/im/v1/messages"
ENCRYPT_KEY = "test-encrypt-key"
VERIFICATION_TOKEN = "test-verification-token"


@pytest.fixture
async def fake() -> AsyncIterator[FeishuFake]:
    async with FeishuFake() as f:
        f.add_chat("oc_group", name="Team")
        yield f


def sdk(
    fake: FeishuFake, *, set_token: bool = False, timeout: float | None = None
) -> tuple[lark.Client, str, str]:
    app_id, secret = fake.new_app()  # a fresh app_id: the SDK token cache is process-global
    builder = (
        lark.Client.builder()
        .app_id(app_id)
        .app_secret(secret)
        .domain(fake.url)
        .log_level(lark.LogLevel.CRITICAL)
        .enable_set_token(set_token)
    )
    if timeout is not None:
        builder = builder.timeout(timeout)
    return builder.build(), app_id, secret


def create_request(
    receive_id: str, text: str, *, uuid: str | None = None, id_type: str = "chat_id"
) -> CreateMessageRequest:
    body = (
        CreateMessageRequestBody.builder()
        .receive_id(receive_id)
        .msg_type("text")
        .content(json.dumps({"text": text}))
    )
    if uuid:
        body = body.uuid(uuid)
    builder = CreateMessageRequest.builder().receive_id_type(id_type)
    return builder.request_body(body.build()).build()


def reply_request(
    message_id: str, text: str, *, in_thread: bool = False, uuid: str | None = None
) -> ReplyMessageRequest:
    body = (
        ReplyMessageRequestBody.builder()
        .msg_type("text")
        .content(json.dumps({"text": text}))
        .reply_in_thread(in_thread)
    )
    if uuid:
        body = body.uuid(uuid)
    return ReplyMessageRequest.builder().message_id(message_id).request_body(body.build()).build()


async def create(
    client: lark.Client, request: CreateMessageRequest, option: Any = None
) -> CreateMessageResponse:
    return await asyncio.to_thread(client.im.v1.message.create, request, option)


async def fetch_token(fake: FeishuFake, app_id: str, secret: str) -> str:
    async with (
        aiohttp.ClientSession() as s,
        s.post(fake.url + TOKEN_PATH, json={"app_id": app_id, "app_secret": secret}) as r,
    ):
        body = await r.json()
    return str(body["tenant_access_token"])


async def post_json(
    fake: FeishuFake, path: str, body: Any, token: str | None, **params: str
) -> tuple[int, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        aiohttp.ClientSession() as s,
        s.post(fake.url + path, json=body, headers=headers, params=params) as r,
    ):
        return r.status, await r.json()


def option_with(token: str) -> lark.RequestOption:
    return lark.RequestOption.builder().tenant_access_token(token).build()


# ---- auth and bot info ------------------------------------------------------------------------


async def test_tenant_token_lifecycle_and_bot_info_over_plain_http(fake: FeishuFake) -> None:
    app_id, secret = fake.new_app()
    first = await fetch_token(fake, app_id, secret)
    assert first.startswith("t-")
    assert await fetch_token(fake, app_id, secret) == first  # >= 30 min left: same token
    fake.advance(7200 - 1700)  # < 30 min left: a new token, the old one still valid
    second = await fetch_token(fake, app_id, secret)
    assert second != first

    async with aiohttp.ClientSession() as s:
        for token in (first, second):
            async with s.get(
                fake.url + "/open-apis/bot/v3/info", headers={"Authorization": f"Bearer {token}"}
            ) as r:
                info = await r.json()
            assert r.status == 200 and info["code"] == 0 and "data" not in info
            assert info["bot"]["open_id"] == "ou_bot" and info["bot"]["app_name"] == "Maka"
            assert info["bot"]["activate_status"] == 2
        async with s.get(fake.url + "/open-apis/bot/v3/info") as r:
            assert r.status == 400 and (await r.json())["code"] == 99991661
        async with s.get(
            fake.url + "/open-apis/bot/v3/info", headers={"Authorization": "Bearer t-unknown"}
        ) as r:
            assert r.status == 400 and (await r.json())["code"] == 99991663

    status, body = await post_json(fake, TOKEN_PATH, {"app_id": app_id, "app_secret": "x"}, None)
    assert (status, body["code"]) == (400, 10014)
    status, body = await post_json(fake, TOKEN_PATH, {"app_id": "cli_no", "app_secret": "x"}, None)
    assert (status, body["code"]) == (400, 10003)


async def test_sdk_wrong_secret_raises_obtain_token_exception(fake: FeishuFake) -> None:
    app_id, _ = fake.new_app()
    client = lark.Client.builder().app_id(app_id).app_secret("wrong").domain(fake.url).build()
    with pytest.raises(ObtainAccessTokenException) as info:
        await create(client, create_request("oc_group", "hi"))
    assert info.value.code == 10014


# ---- sending ----------------------------------------------------------------------------------


async def test_sdk_create_text_message(fake: FeishuFake) -> None:
    client, app_id, _ = sdk(fake)
    resp = await create(client, create_request("oc_group", 'hi <at user_id="ou_alice">Alice</at>'))
    assert resp.success(), (resp.code, resp.msg)
    data = resp.data
    assert data.message_id.startswith("om_") and data.chat_id == "oc_group"
    sender = data.sender
    assert (sender.id, sender.id_type, sender.sender_type) == (app_id, "app_id", "app")
    assert json.loads(data.body.content) == {"text": "hi @_user_1"}  # <at> became a mention key
    assert data.mentions[0].id == "ou_alice" and data.mentions[0].key == "@_user_1"
    assert int(data.create_time) > 0  # a millisecond string on the wire

    [sent] = fake.sent
    assert (sent.message_id, sent.chat_id) == (data.message_id, "oc_group")
    assert sent.text == "hi @_user_1"
    assert "<at user_id" in sent.request_content and sent.app_id == app_id
    assert fake.calls(TOKEN_PATH) == 1
    [request] = [r for r in fake.requests if r.path == MESSAGES]
    assert request.query == {"receive_id_type": "chat_id"}
    assert request.authorization is not None and request.authorization.startswith("Bearer t-")
    assert request.headers["Content-Type"] == "application/json; charset=utf-8"  # sync: requests
    assert fake.history("oc_group")[-1].message_id == data.message_id


async def test_sdk_create_to_open_id_opens_a_p2p_chat(fake: FeishuFake) -> None:
    client, _, _ = sdk(fake)
    resp = await create(client, create_request("ou_alice", "hello", id_type="open_id"))
    assert resp.success()
    chat = fake.chats[resp.data.chat_id]
    assert (chat.chat_type, chat.p2p_user) == ("p2p", "ou_alice")
    again = await create(client, create_request("ou_alice", "again", id_type="open_id"))
    assert again.data.chat_id == chat.chat_id
    bad = await create(client, create_request("alice", "x", id_type="open_id"))
    assert bad.code == 99992351


async def test_sdk_acreate_with_own_token_goes_through_httpx(fake: FeishuFake) -> None:
    client, app_id, secret = sdk(fake, set_token=True)
    token = await fetch_token(fake, app_id, secret)
    outgoing = create_request("oc_group", "async")
    resp = await client.im.v1.message.acreate(outgoing, option_with(token))
    assert resp.success(), (resp.code, resp.msg)
    assert fake.sent[-1].text == "async"
    assert fake.calls(TOKEN_PATH) == 1  # only ours: the SDK used the token we gave it
    [request] = [r for r in fake.requests if r.path == MESSAGES]
    assert request.authorization == f"Bearer {token}"
    assert request.headers["Content-Type"] == "application/json"  # httpx json=, not requests


async def test_sdk_acreate_fetching_its_own_token_blocks_the_event_loop(fake: FeishuFake) -> None:
    client, _, _ = sdk(fake, timeout=0.5)
    # acreate() -> verify() -> TokenManager -> blocking requests.post: the loop (which also
    # runs the fake) is frozen, so the token request cannot even be read until it times out.
    with pytest.raises(requests.exceptions.ReadTimeout):
        await client.im.v1.message.acreate(create_request("oc_group", "never"))
    assert fake.calls(TOKEN_PATH) == 0
    for _ in range(200):  # the loop runs again; the fake now reads the stale request
        if fake.calls(TOKEN_PATH):
            break
        await asyncio.sleep(0.01)
    assert fake.calls(TOKEN_PATH) == 1 and fake.sent == []


async def test_request_option_token_is_ignored_unless_enable_set_token(fake: FeishuFake) -> None:
    client, app_id, secret = sdk(fake)  # enable_set_token(False), the default
    resp = await create(client, create_request("oc_group", "x"), option_with("t-mine"))
    assert resp.success()  # the SDK silently replaced our token with one it fetched itself
    assert fake.calls(TOKEN_PATH) == 1
    assert fake.requests[-1].authorization != "Bearer t-mine"

    own = (
        lark.Client.builder()
        .app_id(app_id)
        .app_secret(secret)
        .domain(fake.url)
        .enable_set_token(True)
        .build()
    )
    resp = await create(own, create_request("oc_group", "y"), option_with("t-mine"))
    assert (resp.code, resp.raw.status_code) == (99991663, 400)
    assert fake.requests[-1].authorization == "Bearer t-mine"
    assert fake.calls(TOKEN_PATH) == 1


async def test_sdk_reply_in_thread_and_list_thread(fake: FeishuFake) -> None:
    client, _, _ = sdk(fake)
    root = HistoryMessage.text("question", create_time=datetime.now(UTC) - timedelta(minutes=1))
    fake.add_history("oc_group", [root])
    first = await asyncio.to_thread(
        client.im.v1.message.reply, reply_request(root.message_id, "a1", in_thread=True)
    )
    assert first.success(), (first.code, first.msg)
    thread_id = first.data.thread_id
    assert thread_id.startswith("omt_")
    assert first.data.root_id == first.data.parent_id == root.message_id
    second = await asyncio.to_thread(
        client.im.v1.message.reply, reply_request(first.data.message_id, "a2")
    )
    assert second.data.thread_id == thread_id and second.data.parent_id == root.message_id
    assert [s.reply_to for s in fake.sent] == [root.message_id, first.data.message_id]

    def listing(container_type: str, container_id: str) -> list[Any]:
        req = (
            ListMessageRequest.builder()
            .container_id_type(container_type)
            .container_id(container_id)
            .build()
        )
        resp = client.im.v1.message.list(req)
        assert resp.success(), (resp.code, resp.msg)
        return list(resp.data.items or [])

    in_chat = await asyncio.to_thread(listing, "chat", "oc_group")
    assert [m.message_id for m in in_chat] == [root.message_id]  # thread replies stay in thread
    assert in_chat[0].thread_id == thread_id
    in_thread = await asyncio.to_thread(listing, "thread", thread_id)
    texts = [json.loads(m.body.content)["text"] for m in in_thread]
    assert texts == ["question", "a1", "a2"]

    missing = await asyncio.to_thread(client.im.v1.message.reply, reply_request("om_nope", "x"))
    assert (missing.code, missing.raw.status_code) == (99992354, 400)
    fake.recall_message(root.message_id)
    recalled = await asyncio.to_thread(
        client.im.v1.message.reply, reply_request(root.message_id, "x")
    )
    assert recalled.code == 230011


async def test_sdk_list_history_pages_time_range_and_sort(fake: FeishuFake) -> None:
    client, _, _ = sdk(fake)
    base = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
    bob = Mention("ou_bot", "Maka")
    fake.add_history(
        "oc_group",
        [
            HistoryMessage.text(
                f"m{i}", create_time=base + timedelta(minutes=i), mentions=[bob] if i == 0 else None
            )
            for i in range(7)
        ],
    )

    def page(**kw: Any) -> Any:
        b = ListMessageRequest.builder().container_id_type("chat").container_id("oc_group")
        for key, value in kw.items():
            b = getattr(b, key)(value)
        return client.im.v1.message.list(b.build())

    texts: list[str] = []
    token: str | None = None
    pages = 0
    while True:
        more: dict[str, str] = {"page_token": token} if token else {}
        resp = await asyncio.to_thread(page, page_size=3, **more)
        assert resp.success(), (resp.code, resp.msg)
        pages += 1
        texts += [json.loads(m.body.content)["text"] for m in resp.data.items]
        if not resp.data.has_more:
            break
        token = resp.data.page_token
    assert pages == 3 and texts == [f"m{i}" for i in range(7)]

    first = (await asyncio.to_thread(page, page_size=1)).data.items[0]
    assert first.create_time == str(int(base.timestamp() * 1000))
    assert (first.sender.id, first.sender.id_type, first.sender.sender_type) == (
        "ou_user",
        "open_id",
        "user",
    )
    assert first.mentions[0].id == "ou_bot" and first.chat_id == "oc_group"

    start, end = (
        int((base + timedelta(minutes=2)).timestamp()),
        int((base + timedelta(minutes=4)).timestamp()),
    )  # seconds, inclusive
    resp = await asyncio.to_thread(
        page, start_time=str(start), end_time=str(end), sort_type="ByCreateTimeDesc"
    )
    assert [json.loads(m.body.content)["text"] for m in resp.data.items] == ["m4", "m3", "m2"]

    too_big = await asyncio.to_thread(page, page_size=51)
    assert (too_big.code, too_big.raw.status_code) == (99992402, 400)


async def test_sdk_chat_list_only_groups_with_the_bot(fake: FeishuFake) -> None:
    client, _, _ = sdk(fake)
    fake.add_chat("oc_two", name="Two")
    fake.add_chat("oc_gone", name="Left", bot_in_chat=False)
    fake.add_chat("oc_dm", name="", chat_type="p2p", p2p_user="ou_alice")
    names, token = [], None
    while True:
        b = ListChatRequest.builder().page_size(1)
        if token:
            b = b.page_token(token)
        resp = await asyncio.to_thread(client.im.v1.chat.list, b.build())
        assert resp.success(), (resp.code, resp.msg)
        names += [(c.chat_id, c.name) for c in resp.data.items]
        if not resp.data.has_more:
            break
        token = resp.data.page_token
    assert names == [("oc_group", "Team"), ("oc_two", "Two")]


# ---- idempotency and failures -----------------------------------------------------------------


async def test_uuid_dedupes_within_an_hour(fake: FeishuFake) -> None:
    client, _, _ = sdk(fake)
    one = await create(client, create_request("oc_group", "once", uuid="turn-1-call-1"))
    two = await create(client, create_request("oc_group", "once", uuid="turn-1-call-1"))
    assert one.success() and two.success()
    assert one.data.message_id == two.data.message_id and len(fake.sent) == 1
    assert fake.calls(MESSAGES, "POST") == 2
    fake.advance(3601)
    three = await create(client, create_request("oc_group", "once", uuid="turn-1-call-1"))
    assert three.data.message_id != one.data.message_id and len(fake.sent) == 2
    long_uuid = await create(client, create_request("oc_group", "x", uuid="u" * 51))
    assert (long_uuid.code, long_uuid.raw.status_code) == (99992402, 400)


async def test_rate_limit_injection(fake: FeishuFake) -> None:
    client, _, _ = sdk(fake)
    await create(client, create_request("oc_group", "warm the token cache"))
    fake.rate_limit_next(MESSAGES, times=1, reset_seconds=3)
    limited = await create(client, create_request("oc_group", "x"))
    assert (limited.code, limited.raw.status_code) == (99991400, 429)
    assert limited.raw.headers["x-ogw-ratelimit-reset"] == "3"
    assert limited.raw.headers["x-ogw-ratelimit-limit"] == "50"
    ok = await create(client, create_request("oc_group", "y"))
    assert ok.success() and [s.text for s in fake.sent] == ["warm the token cache", "y"]


async def test_fail_next_answers_what_it_is_told(fake: FeishuFake) -> None:
    client, _, _ = sdk(fake)
    fake.fail_next(MESSAGES, http_status=400, code=230020, msg="chat rate limit", method="POST")
    resp = await create(client, create_request("oc_group", "x"))
    assert (resp.code, resp.raw.status_code, resp.msg) == (230020, 400, "chat rate limit")
    fake.fail_next(
        MESSAGES,
        http_status=502,
        raw_body="<html>bad gateway</html>",
        headers={"Content-Type": "text/html"},
    )
    with pytest.raises(json.JSONDecodeError):  # the SDK parses every body as JSON
        await create(client, create_request("oc_group", "x"))
    assert fake.sent == []


async def test_expire_tokens_gives_invalid_token_until_refetched(fake: FeishuFake) -> None:
    client, app_id, secret = sdk(fake)
    assert (await create(client, create_request("oc_group", "before"))).success()
    fake.expire_tokens()
    stale = await create(client, create_request("oc_group", "after"))
    assert (stale.code, stale.raw.status_code) == (99991663, 400)
    assert fake.calls(TOKEN_PATH) == 1  # the SDK neither refreshed nor retried: cached token
    fresh = await fetch_token(fake, app_id, secret)
    own = (
        lark.Client.builder()
        .app_id(app_id)
        .app_secret(secret)
        .domain(fake.url)
        .enable_set_token(True)
        .build()
    )
    assert (await create(own, create_request("oc_group", "again"), option_with(fresh))).success()


async def test_drop_response_after_commit(fake: FeishuFake) -> None:
    client, app_id, secret = sdk(fake)
    await create(client, create_request("oc_group", "warm"))
    fake.drop_response_after_commit(MESSAGES)
    with pytest.raises(requests.exceptions.ConnectionError):
        await create(client, create_request("oc_group", "lost", uuid="u-lost"))
    assert [s.text for s in fake.sent] == ["warm", "lost"]  # it WAS created
    assert fake.requests[-1].status is None
    retry = await create(client, create_request("oc_group", "lost", uuid="u-lost"))
    assert retry.success() and retry.data.message_id == fake.sent[-1].message_id
    assert len(fake.sent) == 2  # the uuid made the resend harmless

    token = await fetch_token(fake, app_id, secret)
    async_client, _, _ = sdk(fake, set_token=True)
    fake.drop_response_after_commit(MESSAGES)
    with pytest.raises(httpx.RemoteProtocolError):
        await async_client.im.v1.message.acreate(
            create_request("oc_group", "a"), option_with(token)
        )
    fake.drop_response_after_commit(MESSAGES)
    with pytest.raises(aiohttp.ServerDisconnectedError):
        await post_json(
            fake,
            MESSAGES,
            {"receive_id": "oc_group", "msg_type": "text", "content": '{"text":"b"}'},
            token,
            receive_id_type="chat_id",
        )
    assert [s.text for s in fake.sent][-2:] == ["a", "b"]


async def test_validation_errors_match_the_docs(fake: FeishuFake) -> None:
    app_id, secret = fake.new_app()
    token = await fetch_token(fake, app_id, secret)
    fake.add_chat("oc_left", name="Left", bot_in_chat=False)

    async def send(body: dict[str, Any], id_type: str = "chat_id") -> tuple[int, int]:
        status, resp = await post_json(fake, MESSAGES, body, token, receive_id_type=id_type)
        return status, resp["code"]

    def text(t: str, chat: str = "oc_group") -> dict[str, Any]:
        return {"receive_id": chat, "msg_type": "text", "content": json.dumps({"text": t})}

    post = {"zh_cn": {"title": "t", "content": [[{"tag": "text", "text": "x" * (31 * 1024)}]]}}
    assert await send({**text("x"), "content": {"text": "x"}}) == (400, 99992402)  # not a string
    assert await send({**text("x"), "content": "not json"}) == (400, 230001)
    assert await send({**text("x"), "msg_type": "interactive", "content": "{"}) == (400, 230099)
    assert await send(text("x" * (140 * 1024))) == (200, 0)
    assert await send(text("x" * (151 * 1024))) == (400, 230025)
    assert await send({**text("x"), "msg_type": "post", "content": json.dumps(post)}) == (
        400,
        230025,
    )
    assert await send(text("x", chat="oc_missing")) == (400, 99992356)
    assert await send(text("x", chat="oc_left")) == (400, 230002)
    assert await send(text("x"), id_type="nope") == (400, 99992402)
    assert await send({**text("x"), "uuid": "u" * 51}) == (400, 99992402)
    assert [len(s.request_content) > 140 * 1024 for s in fake.sent] == [True]


async def test_enforced_chat_qps() -> None:
    async with FeishuFake(enforce_chat_qps=True) as fake:
        fake.add_chat("oc_a", name="A")
        fake.add_chat("oc_b", name="B")
        app_id, secret = fake.new_app()
        token = await fetch_token(fake, app_id, secret)

        async def send(chat: str) -> tuple[int, int]:
            body = {"receive_id": chat, "msg_type": "text", "content": '{"text":"x"}'}
            status, resp = await post_json(fake, MESSAGES, body, token, receive_id_type="chat_id")
            return status, resp["code"]

        assert [await send("oc_a") for _ in range(5)] == [(200, 0)] * 5
        assert await send("oc_a") == (400, 230020)  # per-chat limit: 230020, HTTP 400
        assert await send("oc_b") == (200, 0)
        fake.advance(1.0)
        assert await send("oc_a") == (200, 0)


# ---- events -----------------------------------------------------------------------------------


def dispatcher(
    received: list[P2ImMessageReceiveV1], encrypt_key: str = ENCRYPT_KEY
) -> lark.EventDispatcherHandler:
    return (
        lark.EventDispatcherHandler.builder(encrypt_key, VERIFICATION_TOKEN)
        .register_p2_im_message_receive_v1(received.append)
        .build()
    )


def raw_request(raw: bytes, headers: Any) -> lark.RawRequest:
    req = lark.RawRequest()
    req.uri, req.body, req.headers = "/webhook/event", raw, headers
    return req


def sender(encrypt_key: str | None = ENCRYPT_KEY) -> FeishuEventSender:
    return FeishuEventSender(
        "http://127.0.0.1:9/unused",
        app_id="cli_app",
        encrypt_key=encrypt_key,
        verification_token=VERIFICATION_TOKEN,
    )


def test_lark_aescipher_decrypts_our_payload() -> None:
    events = sender()
    body = events.message_event(text="你好 hello")
    raw, headers = events.encode(body)
    envelope = json.loads(raw)
    assert list(envelope) == ["encrypt"]
    assert json.loads(AESCipher(ENCRYPT_KEY).decrypt_str(envelope["encrypt"])) == body
    assert headers["Content-Type"].startswith("application/json")


def test_lark_dispatcher_verifies_signature_and_parses_message_event() -> None:
    events = sender()
    created = datetime(2024, 5, 1, 9, 30, tzinfo=UTC)
    body = events.message_event(
        text="@_user_1 hello",
        chat_id="oc_group",
        chat_type="group",
        sender_open_id="ou_alice",
        mentions=[Mention("ou_bot", "Maka")],
        create_time=created,
        message_id="om_1",
        root_id="om_0",
        parent_id="om_0",
        thread_id="omt_1",
        event_id="ev_1",
    )
    raw, headers = events.encode(body, timestamp=1714555800, nonce="n1")
    received: list[P2ImMessageReceiveV1] = []
    resp = dispatcher(received).do(raw_request(raw, headers))
    assert resp.status_code == 200, resp.content
    [event] = received
    assert event.header.event_type == "im.message.receive_v1" and event.header.event_id == "ev_1"
    assert event.header.token == VERIFICATION_TOKEN and event.header.app_id == "cli_app"
    msg = event.event.message
    assert (msg.message_id, msg.chat_id, msg.chat_type, msg.message_type) == (
        "om_1",
        "oc_group",
        "group",
        "text",
    )
    assert (msg.root_id, msg.parent_id, msg.thread_id) == ("om_0", "om_0", "omt_1")
    assert json.loads(msg.content) == {"text": "@_user_1 hello"}
    assert msg.create_time == str(int(created.timestamp() * 1000))
    assert msg.mentions[0].key == "@_user_1" and msg.mentions[0].id.open_id == "ou_bot"
    assert event.event.sender.sender_id.open_id == "ou_alice"
    assert event.event.sender.sender_type == "user"

    forged_raw, forged = events.encode(body, forge_signature=True)
    resp = dispatcher(received).do(raw_request(forged_raw, forged))
    assert resp.status_code == 500 and b"signature verification failed" in resp.content
    # The SDK reads headers with exact-case keys: lowercase keys only work in a CI mapping.
    lower = {k.lower(): v for k, v in headers.items()}
    assert dispatcher(received).do(raw_request(raw, CIMultiDict(lower))).status_code == 200
    assert dispatcher(received).do(raw_request(raw, lower)).status_code == 500  # None + str
    assert len(received) == 2


def test_lark_dispatcher_url_verification_plain_and_unknown_event() -> None:
    events = sender()
    raw, headers = events.encode(events.url_verification("chal-1"))
    resp = dispatcher([]).do(raw_request(raw, headers))
    assert resp.status_code == 200 and json.loads(resp.content) == {"challenge": "chal-1"}

    plain = sender(encrypt_key=None)
    raw, headers = plain.encode(plain.message_event(text="hi"))
    assert "X-Lark-Signature" not in headers and json.loads(raw)["schema"] == "2.0"
    received: list[P2ImMessageReceiveV1] = []
    assert dispatcher(received, encrypt_key="").do(raw_request(raw, headers)).status_code == 200
    assert len(received) == 1

    raw, headers = events.encode(
        events.event_of_type("im.chat.member.bot.added_v1", {"chat_id": "oc_new"})
    )
    resp = dispatcher([]).do(raw_request(raw, headers))
    assert resp.status_code == 500  # the SDK turns an unregistered type into a 500 (retry storm)


async def test_post_delivers_to_a_webhook() -> None:
    received: list[P2ImMessageReceiveV1] = []
    handler = dispatcher(received)

    async def webhook(request: web.Request) -> web.Response:
        resp = handler.do(raw_request(await request.read(), request.headers))
        return web.Response(
            status=resp.status_code or 500, body=resp.content, content_type="application/json"
        )

    app = web.Application()
    app.router.add_post("/webhook/event", webhook)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        events = FeishuEventSender(
            f"http://{host}:{port}/webhook/event",
            app_id="cli_app",
            encrypt_key=ENCRYPT_KEY,
            verification_token=VERIFICATION_TOKEN,
        )
        status, text = await events.post(events.url_verification("c-2"))
        assert (status, json.loads(text)) == (200, {"challenge": "c-2"})
        status, text = await events.post(events.message_event(text="hi", message_id="om_p"))
        assert (status, json.loads(text)) == (200, {"msg": "success"})
        assert received[0].event.message.message_id == "om_p"
        status, _ = await events.post(events.message_event(text="x"), forge_signature=True)
        assert status == 500
    finally:
        await runner.cleanup()


async def test_sdk_patch_updates_a_shared_card_and_refuses_what_the_docs_refuse(
    fake: FeishuFake,
) -> None:
    client, _, _ = sdk(fake)

    def card(text: str, *, shared: bool = True) -> str:
        config = {"update_multi": True} if shared else {}
        elements = [{"tag": "markdown", "content": text}]
        return json.dumps({"schema": "2.0", "config": config, "body": {"elements": elements}})

    async def send(msg_type: str, content: str) -> str:
        body = CreateMessageRequestBody.builder().receive_id("oc_group").msg_type(msg_type)
        request = CreateMessageRequest.builder().receive_id_type("chat_id")
        sent = await create(client, request.request_body(body.content(content).build()).build())
        assert sent.success(), sent.msg
        return str(sent.data.message_id)

    async def patch(message_id: str, content: str) -> tuple[int | None, str | None]:
        request = (
            PatchMessageRequest.builder().message_id(message_id)
            .request_body(PatchMessageRequestBody.builder().content(content).build()).build()
        )  # fmt: skip
        resp = await asyncio.to_thread(client.im.v1.message.patch, request)
        return resp.code, resp.msg

    shared = await send("interactive", card("before"))
    assert await patch(shared, card("after")) == (0, "success")
    assert [p.body["body"]["elements"][0]["content"] for p in fake.patched] == ["after"]
    assert (await patch(shared, card("unshared", shared=False)))[0] == 230001
    assert (await patch(await send("text", json.dumps({"text": "hi"})), card("x")))[0] == 230001
    assert (await patch("om_nope", card("x")))[0] == 99992354
    for _ in range(4):  # 5 updates a second per message
        assert (await patch(shared, card("again")))[0] == 0
    assert (await patch(shared, card("too fast")))[0] == 230020
    fake.messages[shared].create_time_ms -= (14 * 86_400 + 1) * 1000  # sent 14 days ago
    assert (await patch(shared, card("late")))[0] == 230001  # only within 14 days
    fake.recall_message(shared)
    assert (await patch(shared, card("gone")))[0] == 230011
    assert len(fake.patched) == 5


async def test_sdk_get_message_returns_a_forward_with_its_messages_and_documented_errors(
    fake: FeishuFake,
) -> None:
    client, _, _ = sdk(fake)
    now = datetime.now(UTC)
    held = [HistoryMessage.text(t, create_time=now) for t in ("one", "two")]
    forward = fake.add_forward("oc_group", HistoryMessage.text("", create_time=now), held)
    fake.add_history("oc_group", [HistoryMessage.text("gone", create_time=now, message_id="om_g")])
    fake.recall_message("om_g")
    fake.add_chat("oc_left", name="Left", bot_in_chat=False)
    fake.add_history("oc_left", [HistoryMessage.text("x", create_time=now, message_id="om_l")])

    def get(message_id: str) -> Any:
        request = GetMessageRequest.builder().message_id(message_id).build()
        return client.im.v1.message.get(request)

    resp = await asyncio.to_thread(get, forward.message_id)
    assert resp.success(), (resp.code, resp.msg)
    items = resp.data.items
    assert [m.msg_type for m in items] == ["merge_forward", "text", "text"]
    assert [m.upper_message_id for m in items[1:]] == [forward.message_id] * 2
    assert [json.loads(m.body.content)["text"] for m in items[1:]] == ["one", "two"]
    recalled = await asyncio.to_thread(get, "om_g")
    assert recalled.success() and recalled.data.items[0].deleted is True
    unknown = await asyncio.to_thread(get, "om_nope")
    assert (unknown.code, unknown.raw.status_code) == (230001, 400)
    assert "invalid message_id" in unknown.msg
    outside = await asyncio.to_thread(get, "om_l")
    assert outside.code == 230002
