"""MAKA_FEISHU_MODE=ws: the real lark-oapi ws.Client against the fake's long connection."""

from __future__ import annotations

import json

import pytest

import bot.channels.feishu.ws as ws_module
from bot.channels.feishu.channel import FeishuChannel
from bot.config import reveal
from bot.runtime import COMPONENTS
from tests.assistant.support import quiet
from tests.fakes.feishu_ws import WS_ENDPOINT_PATH
from tests.feishu_world import FeishuWorld, WorldFactory
from tests.waiting import wait_until

# the SDK's ping loop calls the deprecated `logger.warn` when a ping races a reconnect
pytestmark = pytest.mark.filterwarnings("ignore:The 'warn' method is deprecated")


def _channel(w: FeishuWorld) -> FeishuChannel:
    return next(c for c in w.app.app[COMPONENTS] if isinstance(c, FeishuChannel))


async def _connected(w: FeishuWorld) -> None:
    app_id = w.app.services.settings.feishu_app_id
    assert app_id
    await w.fake.ws_wait_connected(app_id, timeout=20)
    channel = _channel(w)

    async def ready() -> bool:  # connected, and the bot knows its open_id
        return await channel.readiness() is None

    await wait_until(ready)


async def test_long_connection_event_is_stored_answered_once_and_acked(
    make_world: WorldFactory,
) -> None:
    async with make_world(feishu_mode="ws") as w:
        await _connected(w)
        app_id = w.app.services.settings.feishu_app_id
        assert app_id
        event = w.fake.ws_event_sender(app_id).message_event(text="over ws", chat_id="oc_dm")
        w.fake.add_chat("oc_dm2", name="x", chat_type="p2p")
        assert await w.fake.ws_push_event(event) == 200
        assert await w.fake.ws_push_event(event) == 200  # redelivered: acked, not answered

        async def sent() -> bool:
            return len(w.fake.sent) >= 1

        await wait_until(sent)
        await quiet(w)  # acked after ingest: a second answer would have been sent by now
        assert [m.text for m in w.fake.sent] == ["echo: over ws"]
        assert await w.inbox_items() == 1
        async with w.app.http.get(f"{w.app.url}/readyz") as resp:
            body = await resp.json()
        assert resp.status == 200 and body["checks"]["feishu"] == "ok"


async def test_unknown_event_types_are_acked_over_the_long_connection(
    make_world: WorldFactory,
) -> None:
    async with make_world(feishu_mode="ws") as w:
        await _connected(w)
        app_id = w.app.services.settings.feishu_app_id
        assert app_id
        sender = w.fake.ws_event_sender(app_id)
        event = sender.event_of_type("im.chat.member.bot.added_v1", {"chat_id": "oc_group"})
        assert await w.fake.ws_push_event(event) == 200
        assert await w.inbound() == 0


async def test_a_silently_dead_client_is_restarted_by_the_watchdog(
    make_world: WorldFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ws_module, "WATCHDOG_INTERVAL", 0.1)
    async with make_world(feishu_mode="ws") as w:
        await _connected(w)
        settings = w.app.services.settings
        app_id, secret = settings.feishu_app_id, reveal(settings.feishu_app_secret)
        assert app_id and secret
        connection = _channel(w).long_connection
        assert connection is not None
        connection.restart_after = 0.5

        w.fake.add_app(app_id, "rotated")  # the reconnect fails fatally: the SDK goes quiet
        endpoint_calls = w.fake.calls(WS_ENDPOINT_PATH)
        await w.fake.ws_drop_connections(app_id)

        async def refused() -> bool:  # its reconnect was tried, and refused for good
            return w.fake.calls(WS_ENDPOINT_PATH) > endpoint_calls and not connection.connected

        await wait_until(refused)
        w.fake.add_app(app_id, secret)  # credentials good again: only a restart recovers
        await wait_until(lambda: _reconnected(connection))
        assert connection.restarts >= 1
        event = w.fake.ws_event_sender(app_id).message_event(text="back", chat_id="oc_dm")
        assert await w.fake.ws_push_event(event) == 200
        body = json.loads(event["event"]["message"]["content"])
        assert body == {"text": "back"}


async def _reconnected(connection: ws_module.FeishuLongConnection) -> bool:
    return connection.connected and connection.restarts >= 1
