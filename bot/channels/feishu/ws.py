"""The long connection (`MAKA_FEISHU_MODE=ws`): lark-oapi's `ws.Client` in its own thread.

The SDK's client blocks, keeps its event loop in a module global and cannot start inside a
running loop, so it gets a thread and a loop of its own. Each event is read the way the
webhook reads it (the same JSON limits, the same `normalize`) and handed to the same ingest,
on the application's loop; the SDK acks the frame only after ingest returns, i.e. after the
message is committed. A failure to store answers the frame with an error, so Feishu delivers
the event again; a bad event is logged in one line and acked, since sending it again would
not make it any better.

The SDK can die silently (a fatal error while reconnecting leaves `start()` blocked with no
connection), so a watchdog on the application loop restarts the client when it has been
without a connection for too long: a bot that quietly stops until someone restarts it is
one of the complaints we design against.

Card callbacks (`card.action.trigger`, schema 2.0) arrive over this connection as frames of
type "event", like events: lark-oapi 1.7.5 hands only those to the handler (`_handle_data_frame`
drops frames of type "card", the old-style callback, unanswered) and sends what the handler
returns back as the frame's base64 `data`: here the toast the clicker sees.

Several replicas may each hold a connection: Feishu gives each event to one of them, and the
database decides duplicates anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import reprlib
import threading
import time
from collections.abc import Callable
from typing import Any

from bot.channels.feishu.card_action import (
    CARD_ACTION_EVENT,
    PLATFORM,
    NotAClick,
    click_ids,
    toast,
)
from bot.channels.feishu.envelope import Envelope
from bot.channels.feishu.normalize import MESSAGE_EVENT, normalize
from bot.channels.feishu.reaction_event import REACTION_EVENT, normalize_reaction
from bot.channels.feishu.recall_event import RECALL_EVENT, normalize_recall
from bot.channels.feishu.webhook import click_answer, read_click, reason
from bot.channels.ingest import Ingest
from bot.channels.reactions import store_reaction
from bot.web.json_body import parse_json_object
from sources.feishu.sdk import LogLevel, long_connection
from storage.types import utcnow

log = logging.getLogger(__name__)
# Feishu wants the frame answered within about 3 s; ingest commits in milliseconds, and a
# slower commit is better answered with an error (Feishu redelivers; duplicates are caught).
INGEST_TIMEOUT = 2.5
WATCHDOG_INTERVAL = 5.0
RESTART_AFTER = 60.0  # seconds without a connection before the client is rebuilt


class EventReader:
    """What ws.Client calls with each event frame's payload, in place of the SDK's dispatcher
    (which answers unknown event types and its own parsing errors with an error, so Feishu
    delivers them again and again). Message events go to `on_message`, reactions to
    `on_reaction`, recalls to `on_recall`, card callbacks to `on_click` (whose answer, a
    toast, goes back in the ack); anything else is logged and acked. Only what they raise (a
    failure to store) reaches the SDK."""

    def __init__(
        self,
        on_message: Callable[[dict[str, Any]], None],
        on_reaction: Callable[[dict[str, Any]], None] | None = None,
        on_click: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        on_recall: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self._on_message = on_message
        self._on_reaction = on_reaction
        self._on_click = on_click
        self._on_recall = on_recall

    def _do_without_validation(self, payload: bytes) -> Any:  # the name ws.Client calls
        try:
            envelope = Envelope(parse_json_object(payload))
        except Exception as exc:  # Malformed, or anything else the payload made us trip over
            log.warning("refused Feishu event (long connection): %s", reason(exc))
            return None
        if envelope.event_type == REACTION_EVENT and self._on_reaction is not None:
            self._on_reaction(envelope.body)
            return None
        if envelope.event_type == CARD_ACTION_EVENT and self._on_click is not None:
            return self._on_click(envelope.body)
        if envelope.event_type == RECALL_EVENT and self._on_recall is not None:
            self._on_recall(envelope.body)
            return None
        if envelope.event_type != MESSAGE_EVENT:
            log.info(
                "ignored Feishu event type %s (long connection)", reprlib.repr(envelope.event_type)
            )
            return None
        self._on_message(envelope.body)
        return None


class _ClientThread:
    """One SDK client with its thread and loop; replaced whole when it dies."""

    def __init__(self, client: Any) -> None:  # lark_oapi.ws.client.Client
        self.client = client
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="feishu-ws", daemon=True)
        self.ended = False

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        long_connection().loop = self.loop  # the SDK schedules everything on this global
        try:
            self.client.start()
        except Exception as exc:  # start() returns only on a fatal error or our stop
            if self.client._auto_reconnect:
                log.error("Feishu long connection ended: %s", exc)
        finally:
            self.ended = True
            tasks = asyncio.all_tasks(self.loop)
            for task in tasks:
                task.cancel()
            with contextlib.suppress(Exception):
                self.loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            self.loop.close()

    @property
    def connected(self) -> bool:
        return not self.ended and getattr(self.client, "_conn", None) is not None

    async def stop(self) -> None:
        self.client._auto_reconnect = False
        if not self.loop.is_closed() and self.loop.is_running():
            with contextlib.suppress(Exception):
                done = asyncio.run_coroutine_threadsafe(self.client._disconnect(), self.loop)
                await asyncio.wait_for(asyncio.wrap_future(done), 5)
            with contextlib.suppress(RuntimeError):
                self.loop.call_soon_threadsafe(self.loop.stop)
        await asyncio.to_thread(self.thread.join, 5)


class FeishuLongConnection:
    def __init__(
        self,
        *,
        app_id: str,
        app_secret: str,
        domain: str,
        ingest: Ingest,
        bot_open_id: Callable[[], str | None],
        restart_after: float = RESTART_AFTER,
    ) -> None:
        self.app_id, self.app_secret, self.domain = app_id, app_secret, domain
        self.ingest = ingest
        self.bot_open_id = bot_open_id
        self.restart_after = restart_after
        self.restarts = 0
        self._app_loop: asyncio.AbstractEventLoop | None = None
        self._current: _ClientThread | None = None
        self._watchdog: asyncio.Task[None] | None = None
        self._down_since: float | None = None

    @property
    def connected(self) -> bool:
        return self._current is not None and self._current.connected

    def start(self) -> None:
        self._app_loop = asyncio.get_running_loop()
        self._current = self._spawn()
        self._watchdog = asyncio.create_task(self._watch(), name="feishu-ws-watchdog")

    def _spawn(self) -> _ClientThread:
        client = long_connection().Client(
            self.app_id,
            self.app_secret,
            event_handler=EventReader(
                self._on_message, self._on_reaction, self._on_click, self._on_recall
            ),
            domain=self.domain,
            log_level=LogLevel.WARNING,
        )
        runner = _ClientThread(client)
        runner.start()
        return runner

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(WATCHDOG_INTERVAL)
            if self.connected:
                self._down_since = None
                continue
            now = time.monotonic()
            if self._down_since is None:
                self._down_since = now
            if now - self._down_since >= self.restart_after:
                log.warning(
                    "Feishu long connection down for %.0fs: restarting the client",
                    now - self._down_since,
                )
                await self.restart()

    async def restart(self) -> None:
        if self._current is not None:
            await self._current.stop()
        self.restarts += 1
        self._down_since = None
        self._current = self._spawn()

    def _on_message(self, body: dict[str, Any]) -> None:
        """Runs on the connection's thread; blocks it until the message is committed."""
        assert self._app_loop is not None
        bot_open_id = self.bot_open_id()
        if bot_open_id is None:
            raise RuntimeError("bot open_id unknown yet: not acking, Feishu will redeliver")
        try:
            message = normalize(body, bot_open_id=bot_open_id)
        except Exception as exc:  # NotAMessage, or anything else the event made us trip over
            log.warning("refused Feishu event (long connection): %s", reason(exc))
            return
        future = asyncio.run_coroutine_threadsafe(self.ingest.accept(message), self._app_loop)
        future.result(timeout=INGEST_TIMEOUT)

    def _on_reaction(self, body: dict[str, Any]) -> None:
        """Like `_on_message`: blocks the connection's thread until the reaction is stored."""
        assert self._app_loop is not None
        try:
            reaction = normalize_reaction(body, received=utcnow())
        except Exception as exc:  # NotAReaction, or anything else the event made us trip over
            log.warning("refused Feishu event (long connection): %s", reason(exc))
            return
        stored = store_reaction(self.ingest.db, reaction)
        future = asyncio.run_coroutine_threadsafe(stored, self._app_loop)
        future.result(timeout=INGEST_TIMEOUT)

    def _on_recall(self, body: dict[str, Any]) -> None:
        """Like `_on_message`: blocks the connection's thread until the recall is stored."""
        assert self._app_loop is not None
        try:
            recall = normalize_recall(body, received=utcnow())
        except Exception as exc:  # NotARecall, or anything else the event made us trip over
            log.warning("refused Feishu event (long connection): %s", reason(exc))
            return
        future = asyncio.run_coroutine_threadsafe(self.ingest.recall(recall), self._app_loop)
        future.result(timeout=INGEST_TIMEOUT)

    def _on_click(self, body: dict[str, Any]) -> dict[str, Any]:
        """Like `_on_message`, and answers with the toast the clicker sees. A callback that is
        not a click on our buttons is answered with an error toast and acked: sent again, it
        would be no better."""
        assert self._app_loop is not None
        future = asyncio.run_coroutine_threadsafe(self._click(body), self._app_loop)
        return future.result(timeout=INGEST_TIMEOUT)

    async def _click(self, body: dict[str, Any]) -> dict[str, Any]:
        """What the database raises reaches the SDK (an error ack: Feishu sends it again)."""
        try:
            chat_id, _ = click_ids(body)
            chat_type = await self.ingest.chat_type_of(PLATFORM, chat_id)
            click = read_click(body, chat_id, chat_type)
        except NotAClick as exc:
            log.warning("refused Feishu card callback (long connection): %s", reason(exc))
            return toast("This button is not one of ours", "error")
        result = await self.ingest.accept_click(click)
        return click_answer(result.outcome)

    async def stop(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watchdog
        if self._current is not None:
            await self._current.stop()
