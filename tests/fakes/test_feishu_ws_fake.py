"""Self-tests of the long-connection fake against the REAL `lark.ws.Client`.

The SDK client blocks in `start()`, keeps its event loop in the module global
`lark_oapi.ws.client.loop` and cannot start inside a running loop, so `LarkWsRunner` gives it a
thread and a loop of its own. That global also means ONE SDK ws client per process at a time;
the cluster-mode test therefore uses two plain aiohttp clients speaking the protocol.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import parse_qs, urlparse

import aiohttp
import lark_oapi as lark
import lark_oapi.ws.client as lark_ws_client
import pytest
from lark_oapi.api.im.v1 import P2ImMessageReceiveV1
from lark_oapi.ws.exception import ClientException
from lark_oapi.ws.pb.pbbp2_pb2 import Frame

from .feishu import FeishuFake, WsFrame, WsNotConnected, WsPushTimeout
from .feishu_ws import SERVICE_ID, WS_ENDPOINT_PATH

Handler = Callable[[P2ImMessageReceiveV1], None]
# the SDK's ping loop calls the deprecated `logger.warn` when a ping races a reconnect
pytestmark = pytest.mark.filterwarnings("ignore:The 'warn' method is deprecated:DeprecationWarning")


class LarkWsRunner:
    """Runs a `lark.ws.Client` in a daemon thread with its own loop, and stops it cleanly."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.loop: asyncio.AbstractEventLoop | None = None
        self.error: BaseException | None = None
        self.loop_errors: list[dict[str, Any]] = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, name="lark-ws-test", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        loop.set_exception_handler(lambda _loop, context: self.loop_errors.append(context))
        asyncio.set_event_loop(loop)
        previous = lark_ws_client.loop
        lark_ws_client.loop = loop  # the SDK schedules everything on this module global
        self.loop = loop
        try:
            self.client.start()  # returns only by raising: a fatal error, or loop.stop()
        except BaseException as exc:
            self.error = exc
        finally:
            tasks = asyncio.all_tasks(loop)
            for task in tasks:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            loop.close()
            lark_ws_client.loop = previous
            self.done.set()

    async def stop(self, timeout: float = 5.0) -> None:
        loop = self.loop
        if loop is not None and self.thread.is_alive():
            self.client._auto_reconnect = False
            with contextlib.suppress(Exception):
                done = asyncio.run_coroutine_threadsafe(self.client._disconnect(), loop)
                await asyncio.wait_for(asyncio.wrap_future(done), timeout)
            with contextlib.suppress(RuntimeError):  # closed meanwhile
                loop.call_soon_threadsafe(loop.stop)
        if self.thread.ident is not None:
            await asyncio.to_thread(self.thread.join, timeout)
        assert not self.thread.is_alive(), "lark ws client thread did not stop"


@pytest.fixture
async def fake() -> AsyncIterator[FeishuFake]:
    async with FeishuFake() as f:
        yield f


@pytest.fixture
async def runners(fake: FeishuFake) -> AsyncIterator[list[LarkWsRunner]]:
    started: list[LarkWsRunner] = []
    yield started
    for runner in started:
        await runner.stop()


def make_client(
    fake: FeishuFake, handler: Handler, *, app: tuple[str, str] | None = None
) -> tuple[Any, str]:
    app_id, secret = app or fake.new_app()
    dispatcher = (
        lark.EventDispatcherHandler.builder("", "")
        .register_p2_im_message_receive_v1(handler)
        .build()
    )
    client = lark.ws.Client(
        app_id, secret, event_handler=dispatcher, domain=fake.url, log_level=lark.LogLevel.WARNING
    )
    return client, app_id


async def start_client(
    fake: FeishuFake,
    runners: list[LarkWsRunner],
    handler: Handler,
    *,
    connect: bool = True,
) -> tuple[LarkWsRunner, str]:
    client, app_id = make_client(fake, handler)
    runner = LarkWsRunner(client)
    runners.append(runner)
    runner.start()
    if connect:
        await fake.ws_wait_connected(app_id, timeout=10)
    return runner, app_id


# ---- the wire format ---------------------------------------------------------------------------


def test_frame_codec_matches_the_sdk_protobuf() -> None:
    ours = WsFrame(
        seq_id=7,
        log_id=2**63 + 5,
        service=SERVICE_ID,
        method=1,
        headers=[
            ("type", "event"),
            ("message_id", "m-1"),
            ("sum", "1"),
            ("seq", "0"),
            ("trace_id", "t"),
        ],
        payload='{"k": "中文"}'.encode(),
        log_id_new="n",
    )
    sdk = Frame()
    sdk.ParseFromString(ours.encode())
    assert (sdk.SeqID, sdk.LogID, sdk.service, sdk.method) == (7, 2**63 + 5, SERVICE_ID, 1)
    assert [(h.key, h.value) for h in sdk.headers] == ours.headers
    assert sdk.payload == ours.payload and sdk.LogIDNew == "n"
    assert sdk.SerializeToString() == ours.encode()

    # the SDK's own ping frame (negative service too: int32 is sign-extended on the wire)
    for service in (SERVICE_ID, -3):
        ping = lark_ws_client._new_ping_frame(service)
        decoded = WsFrame.decode(ping.SerializeToString())
        assert decoded == WsFrame(service=service, method=0, headers=[("type", "ping")])
        assert decoded.encode() == ping.SerializeToString()


async def test_endpoint_answers_like_feishu(fake: FeishuFake) -> None:
    app_id, secret = fake.new_app()
    async with aiohttp.ClientSession() as http:
        async with http.post(
            fake.url + WS_ENDPOINT_PATH, json={"AppID": app_id, "AppSecret": secret}
        ) as resp:
            assert resp.status == 200
            ok = await resp.json()
        async with http.post(
            fake.url + WS_ENDPOINT_PATH, json={"AppID": app_id, "AppSecret": "wrong"}
        ) as resp:
            assert resp.status == 200
            wrong_secret = await resp.json()
        async with http.post(
            fake.url + WS_ENDPOINT_PATH, json={"AppID": "cli_nope", "AppSecret": secret}
        ) as resp:
            unknown_app = await resp.json()
    assert ok["code"] == 0
    assert ok["data"]["ClientConfig"] == {
        "ReconnectCount": -1,
        "ReconnectInterval": 1,
        "ReconnectNonce": 0,
        "PingInterval": 5,
    }
    url = urlparse(ok["data"]["URL"])
    assert url.scheme == "ws" and f"{url.scheme}://{url.netloc}" == "ws" + fake.url[4:]
    query = parse_qs(url.query)
    assert query["service_id"] == [str(SERVICE_ID)] and query["device_id"][0].isdigit()
    assert wrong_secret["code"] == 1000040345
    assert unknown_app == {"code": 1000040346, "msg": "app_id is invalid", "data": {"URL": ""}}


async def test_sdk_reads_the_endpoint_and_rejects_bad_credentials(fake: FeishuFake) -> None:
    fake.ws_config.reconnect_interval = 3
    client, _ = make_client(fake, lambda _e: None)
    url = await asyncio.to_thread(client._get_conn_url)
    assert url.startswith("ws://127.0.0.1:")
    assert (
        client._reconnect_count,
        client._reconnect_interval,
        client._reconnect_nonce,
        client._ping_interval,
    ) == (-1, 3, 0, 5)

    app_id, _ = fake.new_app()
    bad, _ = make_client(fake, lambda _e: None, app=(app_id, "wrong-secret"))
    with pytest.raises(ClientException) as err:
        await asyncio.to_thread(bad._get_conn_url)
    assert err.value.code == 1000040345


async def test_bad_credentials_make_start_raise_without_retry(
    fake: FeishuFake, runners: list[LarkWsRunner]
) -> None:
    app_id, _ = fake.new_app()
    client, _ = make_client(fake, lambda _e: None, app=(app_id, "wrong-secret"))
    runner = LarkWsRunner(client)
    runners.append(runner)
    runner.start()
    assert await asyncio.to_thread(runner.done.wait, 10)
    assert isinstance(runner.error, ClientException) and runner.error.code == 1000040345
    assert fake.calls(WS_ENDPOINT_PATH) == 1


# ---- events ------------------------------------------------------------------------------------


async def test_pushed_message_reaches_the_handler_and_is_acked_200(
    fake: FeishuFake, runners: list[LarkWsRunner]
) -> None:
    received: list[P2ImMessageReceiveV1] = []
    runner, app_id = await start_client(fake, runners, received.append)
    sender = fake.ws_event_sender(app_id)
    body = sender.message_event(text="hello 飞书", message_id="om_ws1", chat_id="oc_ws")

    code = await fake.ws_push_event(body)

    assert code == 200
    assert len(received) == 1
    event = received[0]
    assert event.header.event_type == "im.message.receive_v1" and event.header.app_id == app_id
    assert event.event.message.message_id == "om_ws1"
    assert event.event.message.chat_id == "oc_ws"
    assert json.loads(event.event.message.content) == {"text": "hello 飞书"}
    delivery = fake.ws_deliveries[-1]
    assert delivery.response == {"code": 200}
    assert delivery.biz_rt is not None and delivery.biz_rt.isdigit()
    assert delivery.conn_id == runner.client._conn_id  # the SDK's conn_id is the device_id
    assert delivery.response_frame is not None
    assert delivery.response_frame.header("message_id") == delivery.message_id


async def test_handler_error_and_unregistered_event_type_are_acked_500(
    fake: FeishuFake, runners: list[LarkWsRunner]
) -> None:
    def boom(_event: P2ImMessageReceiveV1) -> None:
        raise RuntimeError("handler failed")

    _, app_id = await start_client(fake, runners, boom)
    sender = fake.ws_event_sender(app_id)
    assert await fake.ws_push_event(sender.message_event(text="x")) == 500
    assert fake.ws_deliveries[-1].response == {"code": 500}
    # an event type with no registered processor: the dispatcher raises, so 500 as well
    other = sender.event_of_type("im.chat.member.bot.added_v1", {"chat_id": "oc_1"})
    assert await fake.ws_push_event(other) == 500


async def test_fragmented_payload_is_reassembled(
    fake: FeishuFake, runners: list[LarkWsRunner]
) -> None:
    received: list[P2ImMessageReceiveV1] = []
    _, app_id = await start_client(fake, runners, received.append)
    text = "长消息 " * 200
    body = fake.ws_event_sender(app_id).message_event(text=text)
    assert await fake.ws_push_event(body, fragment_size=256) == 200
    delivery = fake.ws_deliveries[-1]
    assert delivery.frames > 3
    assert delivery.response_frame is not None
    assert delivery.response_frame.header("sum") == str(delivery.frames)
    assert json.loads(received[0].event.message.content) == {"text": text}


async def test_blocking_handler_misses_the_deadline_then_acks_late(
    fake: FeishuFake, runners: list[LarkWsRunner]
) -> None:
    _, app_id = await start_client(fake, runners, lambda _e: time.sleep(1.5))
    with pytest.raises(WsPushTimeout):
        await fake.ws_push_event(
            fake.ws_event_sender(app_id).message_event(text="slow"), timeout=0.5
        )
    delivery = fake.ws_deliveries[-1]
    assert delivery.timed_out and delivery.response_code is None
    assert await fake.ws_wait_response(delivery, timeout=5) == 200


async def test_push_without_a_connection_raises(fake: FeishuFake) -> None:
    app_id, _ = fake.new_app()
    with pytest.raises(WsNotConnected):
        await fake.ws_push_event(fake.ws_event_sender(app_id).message_event(text="x"))


# ---- connection lifecycle ----------------------------------------------------------------------


@pytest.mark.parametrize("abort", [False, True], ids=["close-frame", "tcp-abort"])
async def test_client_reconnects_after_the_server_drops_it(
    fake: FeishuFake, runners: list[LarkWsRunner], abort: bool
) -> None:
    received: list[P2ImMessageReceiveV1] = []
    runner, app_id = await start_client(fake, runners, received.append)
    first = fake.ws_conn_ids(app_id)

    assert await fake.ws_drop_connections(app_id, abort=abort) == 1
    assert fake.ws_connections(app_id) == 0
    await fake.ws_wait_connected(app_id, timeout=10)

    assert fake.ws_conn_ids(app_id) != first
    assert fake.calls(WS_ENDPOINT_PATH) == 2  # a fresh URL (and ticket) per connection
    log = [c for c in fake.ws_connection_log if c.app_id == app_id]
    assert [c.closed_by for c in log] == ["abort" if abort else "server", None]
    body = fake.ws_event_sender(app_id).message_event(text="after reconnect")
    assert await fake.ws_push_event(body) == 200
    assert [json.loads(e.event.message.content)["text"] for e in received] == ["after reconnect"]
    assert runner.thread.is_alive()


async def test_a_fatal_error_while_reconnecting_leaves_the_client_silently_dead(
    fake: FeishuFake, runners: list[LarkWsRunner]
) -> None:
    """The secret rotated while connected: the reconnect gets 1000040345, a ClientException
    that ends the SDK's receive task; `start()` keeps blocking, nothing retries, `_conn` stays
    None. A production wrapper must watch for this itself."""
    runner, app_id = await start_client(fake, runners, lambda _e: None)
    fake.add_app(app_id, "rotated-secret")
    await fake.ws_drop_connections(app_id)
    await asyncio.sleep(2.5)  # ReconnectInterval is 1 s: a retrying client would have called
    assert fake.calls(WS_ENDPOINT_PATH) == 2
    assert fake.ws_connections(app_id) == 0
    assert runner.thread.is_alive() and runner.error is None
    assert runner.client._conn is None


async def test_pings_arrive_and_pongs_reconfigure_the_client(
    fake: FeishuFake, runners: list[LarkWsRunner]
) -> None:
    fake.ws_config.ping_interval = 1
    runner, app_id = await start_client(fake, runners, lambda _e: None)
    await fake.ws_wait_pings(app_id, 2, timeout=10)
    ping = fake.ws_pings_for(app_id)[0]
    assert ping.frame.method == 0 and ping.frame.headers == [("type", "ping")]
    assert ping.frame.service == SERVICE_ID == int(runner.client._service_id)

    fake.ws_config.ping_interval = 2  # applied by the client from the next pong
    seen = len(fake.ws_pings_for(app_id))
    await fake.ws_wait_pings(app_id, seen + 1, timeout=10)
    deadline = time.monotonic() + 5
    while runner.client._ping_interval != 2 and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert runner.client._ping_interval == 2


async def test_refused_handshake_is_retried_but_conn_limit_is_fatal(
    fake: FeishuFake, runners: list[LarkWsRunner]
) -> None:
    fake.ws_fail_next_handshake()  # 514 / autherrcode 1000040348: a ServerException, retried
    _, app_id = await start_client(fake, runners, lambda _e: None)
    assert fake.calls(WS_ENDPOINT_PATH) == 2 and fake.ws_connections(app_id) == 1

    fake.ws_max_connections = 0  # 514 / 1000040350: a ClientException, start() gives up
    runner, _ = await start_client(fake, runners, lambda _e: None, connect=False)
    assert await asyncio.to_thread(runner.done.wait, 10)
    assert isinstance(runner.error, ClientException) and runner.error.code == 514


async def test_cluster_mode_delivers_each_event_to_one_connection(fake: FeishuFake) -> None:
    """Two plain clients of one app, acking as the SDKs do; a reused ticket is refused."""
    app_id, secret = fake.new_app()
    got: dict[str, list[str]] = {}

    async def serve(ws: aiohttp.ClientWebSocketResponse, name: str) -> None:
        async for msg in ws:
            frame = WsFrame.decode(msg.data)
            if frame.method == 1:
                got.setdefault(name, []).append(frame.header("message_id") or "")
                frame.headers.append(("biz_rt", "0"))
                frame.payload = b'{"code": 200}'
                await ws.send_bytes(frame.encode())

    async with aiohttp.ClientSession() as http:
        urls = []
        for _ in range(2):
            async with http.post(
                fake.url + WS_ENDPOINT_PATH, json={"AppID": app_id, "AppSecret": secret}
            ) as resp:
                urls.append((await resp.json())["data"]["URL"])
        sockets = [await http.ws_connect(url) for url in urls]
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await http.ws_connect(urls[0])  # the ticket was used
        assert refused.value.status == 401
        assert refused.value.headers is not None
        assert refused.value.headers["Handshake-Autherrcode"] == "1000040348"
        tasks = [asyncio.create_task(serve(ws, f"c{i}")) for i, ws in enumerate(sockets)]
        await fake.ws_wait_connected(app_id, count=2)
        sender = fake.ws_event_sender(app_id)
        for i in range(20):
            assert await fake.ws_push_event(sender.message_event(text=str(i))) == 200
        for ws in sockets:
            await ws.close()
        await asyncio.gather(*tasks)
    assert sum(len(ids) for ids in got.values()) == 20
    assert len(got) == 2  # random choice: both connections served some (p(fail) = 2**-19)
