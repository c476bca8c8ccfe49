"""Retention in the running app: a redelivered Feishu event (through the webhook and ingest)
is still a duplicate after a prune while its first delivery is under a week old, and the
status page, over HTTP, shows the last prune and the table sizes it measured."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

from sqlalchemy import update

from bot.host.retention import Pruner, RetentionPolicy
from storage.models import InboundEvent, InboxItem, OutboxMessage, RetentionState
from storage.types import utcnow
from tests.apps import make_settings, running_app
from tests.assistant.support import quiet
from tests.feishu_world import WorldFactory
from tests.waiting import wait_until


async def test_a_redelivered_event_under_a_week_old_is_still_a_duplicate_after_a_prune(
    make_world: WorldFactory,
) -> None:
    async with make_world(retention_inbox_days=7) as w:
        db = w.app.services.db
        async with db.write() as tx:  # an event from before the week, which does go
            tx.add(
                InboundEvent(
                    platform="feishu",
                    message_id="om_long_ago",
                    event_type="message",
                    chat_id="oc_dm",
                    payload={},
                    status="accepted",
                    received_at=utcnow() - timedelta(days=8),
                )
            )
        event = w.message("hello", chat_id="oc_dm", sender_open_id="ou_user")
        assert (await w.events.post(event))[0] == 200

        async def answered() -> bool:
            return len(w.fake.sent) == 1

        await wait_until(answered, what="the reply to the first delivery")
        await quiet(w)
        six_days_ago = utcnow() - timedelta(days=6)
        async with db.write() as tx:  # what the first delivery stored, six days on
            await tx.execute(
                update(InboundEvent)
                .where(InboundEvent.message_id != "om_long_ago")
                .values(received_at=six_days_ago)
            )
            await tx.execute(
                update(InboxItem).values(created_at=six_days_ago, delivered_at=six_days_ago)
            )
        policy = RetentionPolicy.from_settings(w.app.services.settings)
        report = await Pruner(db, policy, "test-pruner").prune()
        assert report.deleted["inbound_events"] == 1 and report.deleted["inbox_items"] == 0
        assert await w.inbound() == 1

        status, body = await w.events.post(event)  # Feishu redelivers
        assert (status, json.loads(body)["outcome"]) == (200, "duplicate")
        await quiet(w)
        assert [m.text for m in w.fake.sent] == ["echo: hello"]
        assert await w.inbox_items() == 1 and await w.inbound() == 1


async def test_the_status_page_shows_the_last_prune_and_table_sizes(
    tmp_path: Path, database_url: str
) -> None:
    settings = make_settings(tmp_path, database_url)
    async with running_app(settings) as app:
        assert "retention" in app.services.host.status()  # the worker runs where workers run
        db = app.services.db
        long_ago = utcnow() - timedelta(days=40)
        async with db.write() as tx:
            tx.add_all(
                OutboxMessage(
                    idempotency_key=f"k{n}",
                    platform="feishu",
                    chat_id="oc_1",
                    content_type="text",
                    content={"text": "hi"},
                    state="sent",
                    created_at=long_ago,
                    next_attempt_at=long_ago,
                )
                for n in range(3)
            )
        async with app.http.get(f"{app.url}/status.json") as resp:
            before = (await resp.json())["retention"]
        assert [(i["name"], i["state"]) for i in before] == [("last prune", "never")]
        report = await Pruner(db, RetentionPolicy.from_settings(settings), "test").prune()
        assert report.deleted["outbox"] == 3
        async with app.http.get(f"{app.url}/status.json") as resp:
            items = {i["name"]: i for i in (await resp.json())["retention"]}
        async with app.http.get(f"{app.url}/status") as resp:
            page = await resp.text()
        async with db.write() as tx:  # no pass for four intervals: no worker is pruning
            await tx.execute(
                update(RetentionState).values(finished_at=utcnow() - timedelta(hours=4))
            )
        async with app.http.get(f"{app.url}/status.json") as resp:
            late = next(i for i in (await resp.json())["retention"] if i["name"] == "last prune")
    assert late["red"] and "is a worker running" in late["hint"]
    last = items["last prune"]
    assert last["state"].endswith(", 3 rows removed") and "outbox 3" in last["detail"]
    assert not last["red"]
    assert re.fullmatch(r"\d+ rows", items["table outbox"]["state"])
    assert items["table outbox"]["detail"] == "keeps 30 days"
    assert items["table source_records"]["detail"] == "kept until forgotten"
    if "sqlite" in database_url:  # exact there; PostgreSQL's is the planner's estimate
        assert items["table outbox"]["state"] == "0 rows"
    assert "Data retention" in page and "What to do" not in page.split("Data retention")[1]
    assert "Data retention" in page and "3 rows removed" in page and "table inbox_items" in page
