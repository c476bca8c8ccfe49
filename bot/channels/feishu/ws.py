"""The long connection (`MAKA_FEISHU_MODE=ws`): lark-oapi's `ws.Client` in its own thread.

The SDK's client blocks, keeps its event loop in a module global and cannot start inside a
running loop, so it gets a thread and a loop of its own. Each event is handed to the same
ingest as the webhook, on the application's loop, and the SDK acks the frame only after
ingest returns, i.e. after the message is committed. A failure to store answers the frame
with an error, so Feishu delivers the event again.

Several replicas may each hold a connection: Feishu gives each event to one of them, and the
database decides duplicates anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Callable
from typing import Any

import lark_oapi as lark
import lark_oapi.ws.client as lark_ws_client
from lark_oapi.api.im.v1 import P2ImMessageReceiveV1

from bot.channels.feishu.normalize import normalize
from bot.channels.ingest import Ingest

log = logging.getLogger(__name__)
INGEST_TIMEOUT = 30.0


class UnknownEventsAcked:
    """The SDK dispatcher raises for event types without a handler, which the connection
    answers with an error and Feishu redelivers; unknown types are acked and logged here."""

    def __init__(self, dispatcher: lark.EventDispatcherHandler) -> None:
        self._dispatcher = dispatcher

    def _do_without_validation(self, payload: bytes) -> Any:  # the name ws.Client calls
        try:
            return self._dispatcher._do_without_validation(payload)
        except lark.EventException as exc:
            if "processor not found" not in str(exc):
                raise
            event_type = _event_type(payload)
            log.info("ignored Feishu event type %r (long connection)", event_type)
            return None


class FeishuLongConnection:
    def __init__(
        self,
        *,
        app_id: str,
        app_secret: str,
        domain: str,
        ingest: Ingest,
        bot_open_id: Callable[[], str | None],
    ) -> None:
        self.ingest = ingest
        self.bot_open_id = bot_open_id
        self._app_loop: asyncio.AbstractEventLoop | None = None
        self._ws_loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        dispatcher = (
            lark.EventDispatcherHandler.builder("", "")
            .register_p2_im_message_receive_v1(self._on_message)
            .build()
        )
        self.client = lark.ws.Client(
            app_id,
            app_secret,
            event_handler=UnknownEventsAcked(dispatcher),
            domain=domain,
            log_level=lark.LogLevel.WARNING,
        )

    @property
    def connected(self) -> bool:
        return (
            self._thread is not None
            and self._thread.is_alive()
            and getattr(self.client, "_conn", None) is not None
        )

    def start(self) -> None:
        self._app_loop = asyncio.get_running_loop()
        self._thread = threading.Thread(target=self._run, name="feishu-ws", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        lark_ws_client.loop = loop  # the SDK reads its loop from this module global
        self._ws_loop = loop
        try:
            self.client.start()
        except Exception as exc:  # start() returns only on failure or stop()
            if not loop.is_closed() and loop.is_running():
                return
            log.error("Feishu long connection ended: %s", exc)

    def _on_message(self, event: P2ImMessageReceiveV1) -> None:
        """Runs on the connection's thread; blocks it until the message is committed."""
        assert self._app_loop is not None
        bot_open_id = self.bot_open_id()
        if bot_open_id is None:
            raise RuntimeError("bot open_id unknown yet: not acking, Feishu will redeliver")
        message = normalize(event, bot_open_id=bot_open_id)
        future = asyncio.run_coroutine_threadsafe(self.ingest.accept(message), self._app_loop)
        future.result(timeout=INGEST_TIMEOUT)

    async def stop(self) -> None:
        loop = self._ws_loop
        if loop is None or loop.is_closed():
            return
        self.client._auto_reconnect = False
        with contextlib.suppress(Exception):
            done = asyncio.run_coroutine_threadsafe(self.client._disconnect(), loop)
            await asyncio.wrap_future(done)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join, 5)


def _event_type(payload: bytes) -> str | None:
    try:
        body = json.loads(payload)
        return str(body.get("header", {}).get("event_type") or body.get("event", {}).get("type"))
    except (ValueError, AttributeError):
        return None
