"""Ingest writes concurrent messages together, once each, and isolates a bad one."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

import pytest
from prometheus_client import REGISTRY
from sqlalchemy import func, select

from bot.channels.ingest import Ingest, Outcome
from bot.channels.messages import AttachmentRef, InboundMessage
from bot.host.notify import Notifier
from storage.db import Database
from storage.models import InboundEvent, InboxItem
from storage.repos import attachments
from storage.types import utcnow


def message(i: int, **kw: object) -> InboundMessage:
    values: dict[str, object] = {
        "platform": "feishu",
        "message_id": f"om_{i}",
        "chat_id": f"oc_{i % 7}",
        "chat_type": "p2p",
        "sender_id": f"ou_{i % 7}",
        "text": f"hello {i}",
        "addressed_text": f"hello {i}",
        "message_type": "text",
        "created_at": utcnow(),
    }
    values.update(kw)
    return InboundMessage(**values)  # type: ignore[arg-type]


async def _count(db: Database, model: type) -> int:
    async with db.read() as s:
        return int(await s.scalar(select(func.count()).select_from(model)) or 0)


def _batches() -> tuple[float, float]:
    return (
        REGISTRY.get_sample_value("maka_ingest_batch_size_count") or 0.0,
        REGISTRY.get_sample_value("maka_ingest_batch_size_sum") or 0.0,
    )


async def test_concurrent_messages_share_a_commit_and_duplicates_count_once(
    db: Database,
) -> None:
    ingest = Ingest(db, Notifier(), max_event_age=timedelta(minutes=30))
    before = _batches()
    messages = [message(i) for i in range(90)] + [message(i) for i in range(10)]
    results = await asyncio.gather(*(ingest.accept(m) for m in messages))
    after = _batches()
    outcomes = [r.outcome for r in results]
    assert outcomes.count(Outcome.ANSWERED) == 90 and outcomes.count(Outcome.DUPLICATE) == 10
    assert await _count(db, InboundEvent) == 90 and await _count(db, InboxItem) == 90
    transactions, written = after[0] - before[0], after[1] - before[1]
    assert written == 100 and transactions < 100  # grouped, not one commit per message
    again = await ingest.accept(message(5))
    assert again.outcome is Outcome.DUPLICATE


async def test_one_bad_message_does_not_hold_back_its_batch(db: Database) -> None:
    ingest = Ingest(db, Notifier(), max_event_age=timedelta(minutes=30))
    poison = message(999, raw={"not json": datetime.now()})
    results = await asyncio.gather(
        *(ingest.accept(m) for m in [message(1), poison, message(2)]), return_exceptions=True
    )
    assert isinstance(results[1], Exception)
    assert [r.outcome for r in (results[0], results[2])] == [Outcome.ANSWERED] * 2  # type: ignore[union-attr]
    assert await _count(db, InboundEvent) == 2


@pytest.mark.parametrize("age", [timedelta(hours=2)])
async def test_an_old_message_is_stored_but_not_answered(db: Database, age: timedelta) -> None:
    ingest = Ingest(db, Notifier(), max_event_age=timedelta(minutes=30))
    result = await ingest.accept(message(1, created_at=utcnow() - age))
    assert result.outcome is Outcome.STALE
    assert await _count(db, InboundEvent) == 1 and await _count(db, InboxItem) == 0


async def test_a_group_file_not_addressed_to_the_bot_is_still_registered_once(
    db: Database,
) -> None:
    ingest = Ingest(db, Notifier(), max_event_age=timedelta(minutes=30))
    ref = AttachmentRef(key="file_v3_q3", kind="file", name="q3.pdf")
    group_file = message(
        7, chat_type="group", message_type="file", text="[file: q3.pdf]", attachments=(ref,)
    )
    first = await ingest.accept(group_file)
    again = await ingest.accept(group_file)  # a redelivery adds nothing
    async with db.read() as tx:
        rows = await attachments.of_messages(tx, "feishu", ["om_7"])
    assert (first.outcome, again.outcome) == (Outcome.HISTORY, Outcome.DUPLICATE)
    assert [(r.resource_key, r.name, r.state, r.scope, r.source) for r in rows] == [
        ("file_v3_q3", "q3.pdf", attachments.FETCH, "group:oc_0", "feishu:oc_0")
    ]
