"""`im.message.reaction.created_v1`, through the webhook and the long connection alike:
stored once per event (a redelivery is a duplicate), never a turn or an inbox item; a
reaction event without its id or message is a 400 with one line, not a 500."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from storage.models import InboxItem, MessageReaction
from tests.channels.feishu.test_long_connection import _connected
from tests.fakes import FeishuEventSender
from tests.feishu_world import OWNER, WorldFactory

REACTION = "im.message.reaction.created_v1"


def reaction(sender: FeishuEventSender, message_id: str | None, event_id: str) -> dict[str, Any]:
    event: dict[str, Any] = {
        "reaction_type": {"emoji_type": "OK"},
        "operator_type": "user",
        "user_id": {"open_id": OWNER, "union_id": "on_owner", "user_id": "owner"},
        "app_id": sender.app_id,
        "action_time": "1764900000000",
    }
    if message_id is not None:
        event["message_id"] = message_id
    return sender.event_of_type(REACTION, event, event_id=event_id)


async def test_a_reaction_by_webhook_is_stored_once_and_starts_nothing(
    make_world: WorldFactory,
) -> None:
    async with make_world() as w:
        for _ in range(2):
            status, body = await w.events.post(reaction(w.events, "om_told", "ev_1"))
            assert status == 200, body
        assert '"duplicate"' in body
        status, body = await w.events.post(reaction(w.events, None, "ev_2"))
        assert status == 400 and "without a usable message_id" in body
        async with w.app.services.db.read() as s:
            [stored] = (await s.scalars(select(MessageReaction))).all()
        assert (stored.message_id, stored.operator_id, stored.emoji) == ("om_told", OWNER, "OK")
        assert stored.created_at.timestamp() == 1764900000
        assert await w.count(InboxItem) == 0 and await w.inbound() == 0


@pytest.mark.filterwarnings("ignore:The 'warn' method is deprecated")
async def test_a_reaction_over_the_long_connection_is_stored_once(
    make_world: WorldFactory,
) -> None:
    async with make_world(feishu_mode="ws") as w:
        await _connected(w)
        app_id = w.app.services.settings.feishu_app_id
        assert app_id
        event = reaction(w.fake.ws_event_sender(app_id), "om_told", "ev_ws")
        assert await w.fake.ws_push_event(event) == 200
        assert await w.fake.ws_push_event(event) == 200  # redelivered
        assert await w.count(MessageReaction) == 1
        assert await w.count(InboxItem) == 0
