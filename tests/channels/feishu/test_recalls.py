"""`im.message.recalled_v1`: a recalled message leaves search, memory and the inbox, through
the webhook and the long connection, once; a recall that comes before its message keeps the
message from being answered or indexed. The real Bot, search index and followers run; only
the model is scripted."""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import select

import bot.assistant.worker as worker_module
from bot.assistant.visibility import Visibility
from bot.llm.scripted import ScriptedProvider
from bot.memory.recall import MemoryAccess, memory_search
from storage.models import InboundEvent, InboxItem, SessionEvent, SourceRecord
from storage.repos.redactions import RECALLED_TEXT
from storage.repos.taken_back import RECALLED
from tests.assistant.support import bot_world, quiet, replies, say, send
from tests.feishu_world import FeishuWorld, WorldFactory
from tests.seed import OWNER
from tests.waiting import wait_until

DM = "oc_owner_dm"
RECALL_DEADLINE = 2.0  # seconds: the recalled words leave search within this


async def found(w: FeishuWorld, words: str) -> bool:
    return bool(await w.app.services.search.search(words))


def owner_access(w: FeishuWorld) -> MemoryAccess:
    """memory_search as the owner's DM asks it (sees everything)."""
    services = w.app.services
    everything = Visibility(everything=True, conversation_id=None)
    return MemoryAccess(services.db, services.search, everything, services.settings.tz)


async def post_recall(w: FeishuWorld, message_id: str, chat_id: str = DM, **kw: Any) -> str:
    event = w.events.recalled_event(message_id=message_id, chat_id=chat_id, **kw)
    status, body = await w.events.post(event)
    assert status == 200, body
    return body


async def item_of(w: FeishuWorld, message_id: str) -> InboxItem | None:
    async with w.app.services.db.read() as tx:
        return await tx.scalar(
            select(InboxItem).where(InboxItem.dedupe_key == f"feishu:{message_id}")
        )


async def stored_as_received(w: FeishuWorld, message_id: str) -> str:
    """The message's stored inbound event and inbox item payloads, as one text."""
    async with w.app.services.db.read() as tx:
        event = await tx.scalar(
            select(InboundEvent.payload).where(InboundEvent.message_id == message_id)
        )
        item = await tx.scalar(
            select(InboxItem.payload).where(InboxItem.dedupe_key == f"feishu:{message_id}")
        )
    assert event is not None, f"no inbound event stored for {message_id}"
    return json.dumps([event, item], ensure_ascii=False)


async def records_of(w: FeishuWorld, message_id: str) -> list[SourceRecord]:
    async with w.app.services.db.read() as tx:
        rows = await tx.scalars(select(SourceRecord).where(SourceRecord.external_id == message_id))
        return list(rows.all())


@pytest.fixture
def slow_turns(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A message waits for its turn long enough for the test to recall it first."""
    monkeypatch.setattr(worker_module, "MAX_DEBOUNCE", 120.0)
    return {"bot_debounce": 60.0}


async def test_recalled_message_leaves_search_and_its_turn_is_dropped(
    make_world: WorldFactory, slow_turns: dict[str, Any]
) -> None:
    model = ScriptedProvider([])  # a turn over the recalled message would exhaust it
    async with bot_world(make_world, model, **slow_turns) as w:
        event = await say(w, "the vault code is zebra4471")
        message_id = event["event"]["message"]["message_id"]
        await wait_until(lambda: found(w, "zebra4471"), what="the message in search")

        assert '"outcome": "recalled"' in await post_recall(w, message_id)

        async def gone() -> bool:
            return not await found(w, "zebra4471")

        await wait_until(gone, RECALL_DEADLINE, what="the recalled message to leave search")
        assert await memory_search(owner_access(w), "zebra4471") == "nothing found for 'zebra4471'"
        item = await item_of(w, message_id)
        assert item is not None and item.delivered_at is not None
        assert item.batch_id == RECALLED
        [tombstone] = await records_of(w, message_id)
        assert tombstone.text == "" and tombstone.payload == {"deleted": True}
        await quiet(w)
        assert model.requests == [] and w.fake.sent == []


async def test_a_recalled_message_is_not_kept_as_it_was_received(
    make_world: WorldFactory, slow_turns: dict[str, Any]
) -> None:
    async with bot_world(make_world, ScriptedProvider([]), **slow_turns) as w:
        event = await say(w, "the alarm code is ibex2290")
        message_id = event["event"]["message"]["message_id"]
        assert "ibex2290" in await stored_as_received(w, message_id)

        await post_recall(w, message_id)

        kept = await stored_as_received(w, message_id)
        assert "ibex2290" not in kept
        item = await item_of(w, message_id)
        assert item is not None and item.payload["chat_id"] == DM  # who and where stay
        assert item.payload["sender_id"] == OWNER


async def test_a_recall_before_its_message_keeps_it_unanswered_and_unindexed(
    make_world: WorldFactory, slow_turns: dict[str, Any]
) -> None:
    model = ScriptedProvider([])
    async with bot_world(make_world, model, **slow_turns) as w:
        await post_recall(w, "om_early")
        early = w.message("the early words quokka9", chat_id=DM, sender_open_id=OWNER,
                          message_id="om_early")  # fmt: skip
        assert '"outcome": "recalled"' in (await w.events.post(early))[1]
        # a later message in the same chat, not to the bot: once it is searchable, the
        # follower has passed the early one
        later = w.message("a later marker wombat3", chat_id="oc_group", chat_type="group")
        assert (await w.events.post(later))[0] == 200
        await wait_until(lambda: found(w, "wombat3"), what="the later message in search")

        assert not await found(w, "quokka9")
        assert "quokka9" not in await stored_as_received(w, "om_early")
        [record] = await records_of(w, "om_early")
        assert record.payload == {"deleted": True}
        item = await item_of(w, "om_early")
        assert item is not None and item.batch_id == RECALLED and item.delivered_at is not None
        await quiet(w)
        assert model.requests == [] and w.fake.sent == []


async def test_a_redelivered_recall_does_nothing(make_world: WorldFactory) -> None:
    async with bot_world(make_world, ScriptedProvider([])) as w:
        event = w.events.recalled_event(message_id="om_gone", chat_id=DM)
        assert '"outcome": "recalled"' in (await w.events.post(event))[1]
        assert '"outcome": "duplicate"' in (await w.events.post(event))[1]
        recalls = await w.count(InboundEvent, InboundEvent.event_type == "recall")
        assert recalls == 1 and len(await records_of(w, "om_gone")) == 1


async def test_a_recall_without_its_message_id_is_refused(make_world: WorldFactory) -> None:
    async with bot_world(make_world, ScriptedProvider([])) as w:
        event = w.events.event_of_type("im.message.recalled_v1", {"chat_id": DM})
        status, body = await w.events.post(event)
        assert status == 400 and "message_id" in body


async def test_an_answered_message_recalled_leaves_the_turn_log_and_its_search(
    make_world: WorldFactory,
) -> None:
    model = ScriptedProvider([send("send_user", {"text": "noted"}), send("sleep", {})])
    async with bot_world(make_world, model) as w:
        event = await say(w, "my locker is narwhal512")
        message_id = event["event"]["message"]["message_id"]
        assert await replies(w, 1) == ["noted"]

        async def in_log_search() -> bool:
            hits = await w.app.services.search.search("narwhal512")
            return any(h.kind == "session_user" for h in hits)

        await wait_until(in_log_search, what="the turn's log in search")
        await post_recall(w, message_id)

        async def gone() -> bool:
            return not await found(w, "narwhal512")

        await wait_until(gone, RECALL_DEADLINE, what="the recalled words to leave search")
        async with w.app.services.db.read() as tx:
            logged = (
                await tx.scalars(select(SessionEvent).where(SessionEvent.kind == "user"))
            ).all()
        assert logged and all("narwhal512" not in e.text for e in logged)
        assert any(RECALLED_TEXT in e.text and OWNER in e.text for e in logged)


async def test_a_recall_over_the_long_connection_is_stored(make_world: WorldFactory) -> None:
    from tests.channels.feishu.test_long_connection import _connected

    async with make_world(feishu_mode="ws") as w:
        await _connected(w)
        app_id = w.app.services.settings.feishu_app_id
        assert app_id
        sender = w.fake.ws_event_sender(app_id)
        event = sender.recalled_event(message_id="om_ws_gone", chat_id="oc_dm")
        assert await w.fake.ws_push_event(event) == 200
        assert await w.fake.ws_push_event(event) == 200  # redelivered: acked, nothing more
        assert await w.count(InboundEvent, InboundEvent.event_type == "recall") == 1
        [record] = await records_of(w, "om_ws_gone")
        assert record.payload == {"deleted": True}
