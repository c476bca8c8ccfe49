"""Sources in the running service: webhook and history sync share one record per message,
the schedule asks the worker for syncs, `/sync` in chat, records found by search."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from sqlalchemy import select

from bot.assistant.component import Assistant
from bot.sync.component import TIMER_KIND, timer_key
from storage.db import Database
from storage.models import InboundEvent, Source, SourceRecord, Timer
from storage.repos import sources as sources_repo
from storage.types import utcnow
from tests.assistant.support import replies, say, say_in_group
from tests.fakes import HistoryMessage
from tests.feishu_world import FeishuWorld, WorldFactory
from tests.waiting import wait_until


async def records(w: FeishuWorld, message_id: str | None = None) -> list[SourceRecord]:
    async with w.app.services.db.read() as s:
        stmt = select(SourceRecord).order_by(SourceRecord.id)
        if message_id is not None:
            stmt = stmt.where(SourceRecord.external_id == message_id)
        return list((await s.scalars(stmt)).all())


async def source_row(db: Database, name: str) -> Source | None:
    async with db.read() as s:
        return await s.scalar(select(Source).where(Source.name == name))


async def synced(w: FeishuWorld, name: str, after: float = 0.0) -> None:
    """Wait until `name` has finished a sync that started after `after` (epoch seconds)."""

    async def done() -> bool:
        row = await source_row(w.app.services.db, name)
        return bool(
            row is not None
            and row.last_success_at is not None
            and row.last_success_at.timestamp() >= after
            and row.wanted_at is None
            and row.lease_owner is None
        )

    await wait_until(done)


async def request(w: FeishuWorld, *names: str, **req: Any) -> None:
    async with w.app.services.db.write() as s:
        for name in names:
            kind = name.split(":")[0]
            await sources_repo.ensure(s, name=name, kind=kind, scope=None, title=None, now=utcnow())
        await sources_repo.request_sync(s, list(names), utcnow(), req or None)
    await w.app.services.notifier.notify("sources")


async def test_a_message_seen_by_webhook_and_by_sync_is_one_record(
    make_world: WorldFactory,
) -> None:
    async with make_world(sync_feishu_interval=0) as w:
        # Webhook first, then the sync finds the same message in the history.
        event = w.message("webhook first", chat_id="oc_group", chat_type="group",
                          sender_open_id="ou_member")  # fmt: skip
        webhook_first = event["event"]["message"]["message_id"]
        assert (await w.events.post(event))[0] == 200
        [record] = await records(w, webhook_first)
        assert record.payload["origin"] == "event" and record.scope == "group:oc_group"

        # Sync first (a message the webhook never delivered), then the webhook brings it.
        late = HistoryMessage.text("sync first", create_time=time.time() - 5,
                                   sender_open_id="ou_user")  # fmt: skip
        w.fake.add_history("oc_dm", [late])
        async with w.app.services.db.write() as s:  # the DM is known (as ingest would know it)
            from storage.repos import conversations

            await conversations.get_or_create(
                s, platform="feishu", chat_id="oc_dm", chat_type="p2p", peer_open_id="ou_user"
            )
        began = time.time()
        await request(w, "feishu")
        await synced(w, "feishu:oc_group", began)
        await synced(w, "feishu:oc_dm", began)
        [record] = await records(w, webhook_first)
        assert record.payload["origin"] == "event"  # the sync's write was a no-op
        [synced_record] = await records(w, late.message_id)
        assert synced_record.payload["origin"] == "history" and synced_record.scope == "dm:ou_user"

        redelivered = w.events.message_event(
            text="sync first", message_id=late.message_id, chat_id="oc_dm", chat_type="p2p",
            sender_open_id="ou_user",
        )  # fmt: skip
        assert (await w.events.post(redelivered))[0] == 200
        assert [r.payload["origin"] for r in await records(w, late.message_id)] == ["history"]
        # ... and the message is still handled as a message: stored, answered once.
        async with w.app.services.db.read() as s:
            assert await s.scalar(
                select(InboundEvent.id).where(InboundEvent.message_id == late.message_id)
            )

        async def answered() -> bool:
            return any(m.reply_to == late.message_id for m in w.fake.sent)

        await wait_until(answered)
        ids = [r.external_id for r in await records(w)]
        assert len(ids) == len(set(ids))


async def test_the_schedule_requests_syncs_that_the_worker_runs(make_world: WorldFactory) -> None:
    async with make_world(sync_feishu_interval=1) as w:
        w.fake.add_history(
            "oc_group", [HistoryMessage.text("scheduled", create_time=time.time() - 30)]
        )
        await synced(w, "feishu:oc_group")
        assert [r.text for r in await records(w)] == ["scheduled"]
        async with w.app.services.db.read() as s:
            timer = await s.scalar(select(Timer).where(Timer.key == timer_key("feishu")))
        assert timer is not None and timer.kind == TIMER_KIND
        assert timer.state == "pending" and timer.due_at > utcnow() - timedelta(seconds=2)

        # Indexed for search with its scope, after the commit.
        search = w.app.services.search

        async def found() -> bool:
            return bool(await search.search("scheduled"))

        await wait_until(found)
        [hit] = await search.search("scheduled")
        assert hit.kind == "source_message" and hit.scope == "group:oc_group"


async def test_sync_commands_answer_in_chat_and_refuse_non_admins(
    make_world: WorldFactory,
) -> None:
    async with make_world(bot=Assistant(), sync_feishu_interval=0, bot_debounce=0.0) as w:
        w.fake.add_history(
            "oc_group", [HistoryMessage.text("team news", create_time=time.time() - 30)]
        )
        await say_in_group(w, "/sync feishu", sender="ou_stranger")
        [refusal] = await replies(w, 1)
        assert refusal.startswith("not permitted")
        row = await source_row(w.app.services.db, "feishu")
        assert row is not None and row.wanted_at is None  # nothing changed

        began = time.time()
        await say(w, "/sync feishu")
        assert "requested" in (await replies(w, 2))[1]
        await synced(w, "feishu:oc_group", began)
        await say(w, "/sync status")
        status = (await replies(w, 3))[2]
        # the history holds the stranger's command and the bot's refusal too: real messages
        count = len([r for r in await records(w) if r.source == "feishu:oc_group"])
        assert count == 3 and f"feishu:oc_group (team): {count} records, last success 20" in status
        assert "feishu: 1 groups" in status

        await say_in_group(w, "/sync status", sender="ou_stranger")
        group_view = (await replies(w, 4))[3]
        assert group_view.startswith("feishu:oc_group (team)")
        assert "oc_owner_dm" not in group_view and "\n" not in group_view

        await say(w, "/sync email")
        assert "email is not configured" in (await replies(w, 5))[4]
