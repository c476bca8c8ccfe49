"""The long-connection (WebSocket) mode of the Feishu fake, mounted on the same aiohttp app.

What the SDKs do, and so what this server answers (lark-oapi `ws/client.py`, oapi-sdk-go
`ws/client.go`, node-sdk `ws-client/index.ts`):

1. `POST {domain}/callback/ws/endpoint` with `{"AppID", "AppSecret"}` (at the domain root, not
   under `/open-apis`). Answer `{"code": 0, "data": {"URL": "wss://...", "ClientConfig":
   {"ReconnectCount", "ReconnectInterval", "ReconnectNonce", "PingInterval"}}}`, integer
   seconds (values seen from production: -1, 90-120, 25-30, 90-120; the SDK defaults are
   -1/120/30/120). HTTP 200 also for errors: an unknown app_id is
   `1000040346 "app_id is invalid"` with `data: {"URL": ""}` (captured from open.feishu.cn), a
   wrong secret `1000040345` (public reports; exact msg unconfirmed). Code 1 ("system busy") and
   1000040343 are retried by the SDKs, every other code is fatal (ClientException).
2. A WebSocket to that URL; the client takes `conn_id` from `device_id` and the ping frame's
   `service` from `service_id` in the query (production: `wss://msg-frontier.feishu.cn/ws/v2?
   fpid=..&aid=..&device_id=..&access_key=..&service_id=..&ticket=..`). A refused handshake is
   a non-101 answer with `Handshake-Status` (514 auth failed, 403 forbidden),
   `Handshake-Msg` and `Handshake-Autherrcode` (1000040350 = too many connections: fatal for
   the SDK; anything else is retried). The ticket is single-use here (public reports of 401 /
   autherrcode 1000040348 when a ticket is reused); the SDK fetches a new URL per connect.
3. Binary protobuf `pbbp2.Frame`s (`WsFrame` below: SeqID, LogID, service, method
   0=CONTROL/1=DATA, headers, payload...). The client pings (CONTROL, `type: ping`,
   `service=service_id`) every PingInterval, first right after connecting; the server answers
   a CONTROL `type: pong` whose optional payload is a ClientConfig JSON the client applies.
   Events are DATA frames with headers `type` ("event" | "card"), `message_id`, `sum`, `seq`,
   `trace_id` (+ `timestamp`, `instance_id`); payload = the event JSON, plain (never
   encrypted on this channel). Payloads can be split into `sum` frames (seq 0..sum-1, same
   message_id); the client reassembles them. The client acks by sending the same frame back
   with an extra `biz_rt` header (ms) and payload `{"code": 200}` or `{"code": 500}` (handler
   raised), plus base64 `data` when the handler returned something (card callbacks).
   Feishu documents that the ack must come within 3 s or the event is pushed again; with
   several connections per app, each event goes to one random connection (cluster mode);
   at most 50 connections per app.
"""

from __future__ import annotations

import asyncio
import json
import random
import secrets
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from aiohttp import WSCloseCode, WSMsgType, web

from .feishu_events import FeishuEventSender
from .feishu_models import JSONDict

WS_ENDPOINT_PATH = "/callback/ws/endpoint"
WS_PATH = "/ws/v2"
OK = 0
APP_ID_INVALID = (1000040346, "app_id is invalid")
APP_SECRET_INVALID = (1000040345, "app_id or app_secret is invalid")
HANDSHAKE_AUTH_FAILED = 514
HANDSHAKE_FORBIDDEN = 403
AUTH_TICKET_INVALID = 1000040348
EXCEED_CONN_LIMIT = 1000040350
MAX_CONNECTIONS_PER_APP = 50
FRAME_CONTROL = 0
FRAME_DATA = 1
SERVICE_ID = 33554678  # what production URLs carry


# ---- pbbp2 wire codec ------------------------------------------------------------------------
# message Header { required string key = 1; required string value = 2; }
# message Frame { required uint64 SeqID = 1; required uint64 LogID = 2; required int32 service = 3;
#   required int32 method = 4; repeated Header headers = 5; optional string payload_encoding = 6;
#   optional string payload_type = 7; optional bytes payload = 8; optional string LogIDNew = 9; }
# Written by hand so the fake does not share the SDK's code; the self-tests compare both.


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # int32 negatives are sign-extended to 10 bytes, as protobuf does
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _field_bytes(number: int, value: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        tag, pos = _read_varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _read_varint(data, pos)
            out.append((number, value))
        elif wire == 2:
            length, pos = _read_varint(data, pos)
            if pos + length > len(data):
                raise ValueError("truncated field")
            out.append((number, data[pos : pos + length]))
            pos += length
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
    return out


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


@dataclass
class WsFrame:
    seq_id: int = 0
    log_id: int = 0
    service: int = 0
    method: int = FRAME_CONTROL
    headers: list[tuple[str, str]] = field(default_factory=list)
    payload_encoding: str | None = None
    payload_type: str | None = None
    payload: bytes | None = None
    log_id_new: str | None = None

    def header(self, key: str) -> str | None:
        return next((v for k, v in self.headers if k == key), None)

    def encode(self) -> bytes:
        out = bytearray()
        for number, value in (
            (1, self.seq_id),
            (2, self.log_id),
            (3, self.service),
            (4, self.method),
        ):
            out += _varint(number << 3) + _varint(value)
        for key, text in self.headers:
            out += _field_bytes(5, _field_bytes(1, key.encode()) + _field_bytes(2, text.encode()))
        for number, optional in ((6, self.payload_encoding), (7, self.payload_type)):
            if optional is not None:
                out += _field_bytes(number, optional.encode())
        if self.payload is not None:
            out += _field_bytes(8, self.payload)
        if self.log_id_new is not None:
            out += _field_bytes(9, self.log_id_new.encode())
        return bytes(out)

    @classmethod
    def decode(cls, data: bytes) -> WsFrame:
        frame = cls()
        for number, value in _fields(data):
            if isinstance(value, int):
                if number == 1:
                    frame.seq_id = value
                elif number == 2:
                    frame.log_id = value
                elif number == 3:
                    frame.service = _int32(value)
                elif number == 4:
                    frame.method = _int32(value)
            elif number == 5:
                parts = dict(_fields(value))
                key, val = parts.get(1, b""), parts.get(2, b"")
                assert isinstance(key, bytes) and isinstance(val, bytes)
                frame.headers.append((key.decode(), val.decode()))
            elif number == 6:
                frame.payload_encoding = value.decode()
            elif number == 7:
                frame.payload_type = value.decode()
            elif number == 8:
                frame.payload = bytes(value)
            elif number == 9:
                frame.log_id_new = value.decode()
        return frame


# ---- records -----------------------------------------------------------------------------------


@dataclass
class WsClientConfig:
    """What the endpoint (and every pong) tells the client, in seconds; short for tests."""

    reconnect_count: int = -1  # negative: retry forever
    reconnect_interval: int = 1
    reconnect_nonce: int = 0  # first-retry jitter upper bound
    ping_interval: int = 5

    def to_json(self) -> JSONDict:
        return {
            "ReconnectCount": self.reconnect_count,
            "ReconnectInterval": self.reconnect_interval,
            "ReconnectNonce": self.reconnect_nonce,
            "PingInterval": self.ping_interval,
        }


class WsNotConnected(RuntimeError):
    """`ws_push_event` found no live long connection for the app."""


class WsPushTimeout(TimeoutError):
    """The client did not ack a pushed event in time (Feishu would push it again)."""


@dataclass
class WsConnectionInfo:
    app_id: str
    conn_id: str  # the URL's device_id, which the SDK logs as conn_id
    service_id: int
    connected_at: float
    closed_at: float | None = None
    closed_by: str | None = None  # "server" | "client" | "abort"


@dataclass
class WsPing:
    app_id: str
    conn_id: str
    frame: WsFrame
    time: float


@dataclass
class WsDelivery:
    """One pushed event: what went out, and the client's ack (also when it came late)."""

    app_id: str
    conn_id: str
    message_id: str  # the frame's message_id header (not the IM message id)
    trace_id: str
    message_type: str
    payload: bytes
    frames: int
    pushed_at: float
    response_code: int | None = None
    response: JSONDict | None = None
    response_frame: WsFrame | None = None
    responded_at: float | None = None
    timed_out: bool = False

    @property
    def biz_rt(self) -> str | None:
        return self.response_frame.header("biz_rt") if self.response_frame else None


@dataclass
class _Ticket:
    app_id: str
    device_id: str
    service_id: int


@dataclass
class _HandshakeFault:
    remaining: int
    http_status: int
    handshake_status: int
    message: str
    auth_errcode: int | None


@dataclass
class _Live:
    info: WsConnectionInfo
    ws: web.WebSocketResponse
    request: web.Request
    seq: int = 0
    pending: dict[str, asyncio.Future[WsFrame]] = field(default_factory=dict)


class WsHandlers:
    """Mixin for FeishuFake: the long-connection endpoint and the WebSocket server."""

    url: str
    tenant_key: str
    _apps: dict[str, str]

    def __init__(self) -> None:
        self.ws_config = WsClientConfig()
        self.ws_pong_config = True  # pongs carry the ClientConfig (the SDK applies it)
        self.ws_fragment_size: int | None = None  # split payloads above this many bytes
        self.ws_max_connections = MAX_CONNECTIONS_PER_APP
        self.ws_pings: list[WsPing] = []
        self.ws_deliveries: list[WsDelivery] = []
        self.ws_connection_log: list[WsConnectionInfo] = []
        self.ws_bad_frames: list[bytes] = []
        self._ws_live: dict[str, dict[str, _Live]] = {}
        self._ws_tickets: dict[str, _Ticket] = {}
        self._ws_by_message_id: dict[str, WsDelivery] = {}
        self._ws_handshake_faults: list[_HandshakeFault] = []
        self._ws_changed: asyncio.Event | None = None

    def now(self) -> float:
        raise NotImplementedError

    def add_ws_routes(self, app: web.Application) -> None:
        app.router.add_post(WS_ENDPOINT_PATH, self._ws_endpoint)
        app.router.add_get(WS_PATH, self._ws_handler)
        app.on_shutdown.append(self._ws_on_shutdown)

    # ---- test API --------------------------------------------------------------------------

    def ws_event_sender(self, app_id: str, verification_token: str = "") -> FeishuEventSender:
        """Builds event bodies for `ws_push_event` (no webhook URL, no encryption)."""
        return FeishuEventSender(
            "",
            app_id=app_id,
            encrypt_key=None,
            verification_token=verification_token,
            tenant_key=self.tenant_key,
        )

    def ws_connections(self, app_id: str) -> int:
        return len(self._ws_live.get(app_id, {}))

    def ws_conn_ids(self, app_id: str) -> list[str]:
        return list(self._ws_live.get(app_id, {}))

    def ws_pings_for(self, app_id: str) -> list[WsPing]:
        return [p for p in self.ws_pings if p.app_id == app_id]

    async def ws_wait_connected(self, app_id: str, timeout: float = 10.0, *, count: int = 1) -> int:
        """Until at least `count` connections of the app are live; returns how many are."""
        await self._ws_wait(
            lambda: self.ws_connections(app_id) >= count,
            timeout,
            f"{count} live long connection(s) of {app_id}",
        )
        return self.ws_connections(app_id)

    async def ws_wait_pings(self, app_id: str, count: int = 1, timeout: float = 10.0) -> None:
        await self._ws_wait(
            lambda: len(self.ws_pings_for(app_id)) >= count,
            timeout,
            f"{count} ping(s) from {app_id}",
        )

    async def ws_wait_response(self, delivery: WsDelivery, timeout: float = 10.0) -> int:
        """The ack of a delivery, also one that arrives after `ws_push_event` gave up."""
        await self._ws_wait(
            lambda: delivery.response_code is not None, timeout, f"the ack of {delivery.message_id}"
        )
        assert delivery.response_code is not None
        return delivery.response_code

    async def ws_push_event(
        self,
        body: JSONDict,
        *,
        timeout: float = 10.0,
        app_id: str | None = None,
        conn_id: str | None = None,
        message_type: str = "event",
        fragment_size: int | None = None,
    ) -> int:
        """Push `body` as DATA frame(s) to one live connection of the app (a random one, as
        Feishu does in cluster mode) and wait for the ack; returns its code (200 / 500).

        The app defaults to `body["header"]["app_id"]`. Raises WsNotConnected when nothing is
        connected, WsPushTimeout when no ack comes in `timeout` (Feishu itself waits 3 s), and
        ConnectionError when the connection closes first. Every push is in `ws_deliveries`.
        """
        app = app_id or (body.get("header") or {}).get("app_id")
        if not app:
            raise ValueError("no app_id: pass app_id= or a schema-2.0 body with header.app_id")
        live = self._ws_live.get(app, {})
        if conn_id is not None:
            if conn_id not in live:
                raise WsNotConnected(f"connection {conn_id} of {app} is not live")
            conn = live[conn_id]
        elif not live:
            raise WsNotConnected(f"no live long connection for app {app}")
        else:
            conn = random.choice(list(live.values()))
        payload = json.dumps(body, ensure_ascii=False).encode()
        size = fragment_size or self.ws_fragment_size
        chunks = [payload]
        if size and len(payload) > size:
            chunks = [payload[i : i + size] for i in range(0, len(payload), size)]
        message_id = str(uuid.uuid4())
        trace_id = secrets.token_hex(16)
        delivery = WsDelivery(
            app,
            conn.info.conn_id,
            message_id,
            trace_id,
            message_type,
            payload,
            len(chunks),
            self.now(),
        )
        self.ws_deliveries.append(delivery)
        self._ws_by_message_id[message_id] = delivery
        future: asyncio.Future[WsFrame] = asyncio.get_running_loop().create_future()
        conn.pending[message_id] = future
        try:
            for seq, chunk in enumerate(chunks):
                conn.seq += 1
                frame = WsFrame(
                    seq_id=conn.seq,
                    log_id=random.getrandbits(63),
                    service=conn.info.service_id,
                    method=FRAME_DATA,
                    headers=[
                        ("type", message_type),
                        ("message_id", message_id),
                        ("sum", str(len(chunks))),
                        ("seq", str(seq)),
                        ("trace_id", trace_id),
                        ("timestamp", str(int(time.time() * 1000))),
                        ("instance_id", "fake-" + conn.info.conn_id[-6:]),
                    ],
                    payload=chunk,
                )
                await conn.ws.send_bytes(frame.encode())
            await asyncio.wait_for(future, timeout)
        except TimeoutError:
            delivery.timed_out = True
            raise WsPushTimeout(
                f"no ack for {message_id} from {conn.info.conn_id} within {timeout}s"
            ) from None
        finally:
            conn.pending.pop(message_id, None)
            if not future.done():
                future.cancel()
        assert delivery.response_code is not None
        return delivery.response_code

    async def ws_drop_connections(
        self, app_id: str, *, abort: bool = False, code: int = WSCloseCode.GOING_AWAY
    ) -> int:
        """The server ends every live connection of the app (a close frame, or with
        `abort=True` a dead TCP connection); the SDK's auto-reconnect then kicks in."""
        live = self._ws_live.pop(app_id, {})
        for conn in live.values():
            self._ws_closed(conn, "abort" if abort else "server")
        self._ws_notify()
        for conn in live.values():
            if abort:
                if conn.request.transport is not None:
                    conn.request.transport.abort()
            else:
                try:
                    await asyncio.wait_for(conn.ws.close(code=code, message=b"server drop"), 5)
                except (TimeoutError, ConnectionError):
                    pass
        return len(live)

    def ws_fail_next_handshake(
        self,
        times: int = 1,
        *,
        handshake_status: int = HANDSHAKE_AUTH_FAILED,
        auth_errcode: int | None = AUTH_TICKET_INVALID,
        message: str = "auth failed",
        http_status: int = 401,
    ) -> None:
        """The next `times` WebSocket handshakes are refused with the Handshake-* headers.
        The SDK gives up (ClientException) for 403, or 514 with autherrcode 1000040350;
        everything else it retries after ReconnectInterval."""
        self._ws_handshake_faults.append(
            _HandshakeFault(times, http_status, handshake_status, message, auth_errcode)
        )

    # ---- plumbing --------------------------------------------------------------------------

    def _ws_notify(self) -> None:
        if self._ws_changed is not None:
            self._ws_changed.set()
        self._ws_changed = asyncio.Event()

    async def _ws_wait(self, predicate: Callable[[], bool], timeout: float, what: str) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not predicate():
            if self._ws_changed is None:
                self._ws_changed = asyncio.Event()
            changed = self._ws_changed
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
            try:
                await asyncio.wait_for(changed.wait(), min(remaining, 0.25))
            except TimeoutError:
                pass

    def _ws_closed(self, conn: _Live, by: str) -> None:
        if conn.info.closed_at is None:
            conn.info.closed_at = self.now()
            conn.info.closed_by = by
        for future in conn.pending.values():
            if not future.done():
                future.set_exception(
                    ConnectionError(
                        f"long connection {conn.info.conn_id} closed ({by}) before the ack"
                    )
                )

    async def _ws_endpoint(self, request: web.Request) -> web.Response:
        try:
            body = json.loads(await request.read())
        except ValueError:
            body = None
        if not isinstance(body, dict):
            body = {}
        app_id = str(body.get("AppID") or "")
        if app_id not in self._apps:
            code, msg = APP_ID_INVALID
            return web.json_response({"code": code, "msg": msg, "data": {"URL": ""}})
        if not body.get("AppSecret") or body["AppSecret"] != self._apps[app_id]:
            code, msg = APP_SECRET_INVALID
            return web.json_response({"code": code, "msg": msg, "data": {"URL": ""}})
        device_id = str(random.randrange(10**18, 10**19))
        ticket = str(uuid.uuid4())
        self._ws_tickets[ticket] = _Ticket(app_id, device_id, SERVICE_ID)
        ws_base = "ws" + self.url.removeprefix("http")
        url = (
            f"{ws_base}{WS_PATH}?fpid=493&aid=552564&device_id={device_id}"
            f"&access_key={secrets.token_hex(16)}&service_id={SERVICE_ID}&ticket={ticket}"
        )
        return web.json_response(
            {
                "code": OK,
                "msg": "ok",
                "data": {"URL": url, "ClientConfig": self.ws_config.to_json()},
            }
        )

    def _ws_refuse(self, fault: _HandshakeFault) -> web.Response:
        headers = {"Handshake-Status": str(fault.handshake_status), "Handshake-Msg": fault.message}
        if fault.auth_errcode is not None:
            headers["Handshake-Autherrcode"] = str(fault.auth_errcode)
        return web.Response(status=fault.http_status, headers=headers)

    def _ws_take_handshake_fault(self) -> _HandshakeFault | None:
        for fault in self._ws_handshake_faults:
            if fault.remaining > 0:
                fault.remaining -= 1
                return fault
        return None

    async def _ws_handler(self, request: web.Request) -> web.StreamResponse:
        fault = self._ws_take_handshake_fault()
        if fault is not None:
            return self._ws_refuse(fault)
        ticket = self._ws_tickets.pop(request.query.get("ticket", ""), None)
        if ticket is None or request.query.get("device_id") != ticket.device_id:
            return self._ws_refuse(
                _HandshakeFault(
                    0, 401, HANDSHAKE_AUTH_FAILED, "auth resp code error", AUTH_TICKET_INVALID
                )
            )
        if self.ws_connections(ticket.app_id) >= self.ws_max_connections:
            return self._ws_refuse(
                _HandshakeFault(
                    0, 401, HANDSHAKE_AUTH_FAILED, "exceed conn limit", EXCEED_CONN_LIMIT
                )
            )
        ws = web.WebSocketResponse(max_msg_size=16 * 1024 * 1024)
        await ws.prepare(request)
        info = WsConnectionInfo(ticket.app_id, ticket.device_id, ticket.service_id, self.now())
        conn = _Live(info, ws, request)
        self.ws_connection_log.append(info)
        self._ws_live.setdefault(ticket.app_id, {})[info.conn_id] = conn
        self._ws_notify()
        try:
            async for msg in ws:
                if msg.type == WSMsgType.BINARY:
                    await self._ws_on_frame(conn, msg.data)
                elif msg.type == WSMsgType.TEXT:
                    self.ws_bad_frames.append(msg.data.encode())
        finally:
            live = self._ws_live.get(ticket.app_id, {})
            if live.get(info.conn_id) is conn:
                del live[info.conn_id]
            self._ws_closed(conn, "client")
            self._ws_notify()
        return ws

    async def _ws_on_frame(self, conn: _Live, data: bytes) -> None:
        try:
            frame = WsFrame.decode(data)
        except ValueError:
            self.ws_bad_frames.append(data)
            return
        kind = frame.header("type")
        if frame.method == FRAME_CONTROL and kind == "ping":
            self.ws_pings.append(WsPing(conn.info.app_id, conn.info.conn_id, frame, self.now()))
            pong = WsFrame(service=frame.service, method=FRAME_CONTROL, headers=[("type", "pong")])
            if self.ws_pong_config:
                pong.payload = json.dumps(self.ws_config.to_json()).encode()
            if not conn.ws.closed:
                await conn.ws.send_bytes(pong.encode())
            self._ws_notify()
            return
        delivery = self._ws_by_message_id.get(frame.header("message_id") or "")
        if frame.method != FRAME_DATA or delivery is None or delivery.response_code is not None:
            self.ws_bad_frames.append(data)
            return
        try:
            response = json.loads(frame.payload or b"")
            code = int(response["code"])
        except (ValueError, KeyError, TypeError):
            self.ws_bad_frames.append(data)
            return
        delivery.response, delivery.response_code = response, code
        delivery.response_frame, delivery.responded_at = frame, self.now()
        future = conn.pending.get(delivery.message_id)
        if future is not None and not future.done():
            future.set_result(frame)
        self._ws_notify()

    async def _ws_on_shutdown(self, app: web.Application) -> None:
        for app_id in list(self._ws_live):
            await self.ws_drop_connections(app_id)
