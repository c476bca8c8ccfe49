"""A turn whose conversation another turn has taken over writes nothing more, and a
conversation another turn holds is not claimed again and again.

A takeover happens when a replica is cut off from the database for longer than its liveness
lease: the first replica back sees it gone and takes its conversations, while its turn may
still be running (the fault suite's PostgreSQL restart once ended with one reply doubled and
one lost that way). Here "another replica" is a live Host's liveness lease and the
conversation's lease in its name, written straight into the database."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select, update

from bot.assistant import worker as bot_worker
from bot.llm.scripted import ScriptedProvider
from bot.llm.types import Message, ToolSpec
from storage import claims
from storage.models import Conversation, InboxItem, Lease, OutboxMessage
from storage.repos import leases
from storage.types import utcnow
from tests.assistant.support import bot_world, replies, say, sleep
from tests.feishu_world import FeishuWorld, WorldFactory
from tests.waiting import wait_until

send = ScriptedProvider.tool_call
OTHER = "replica-b"
LONG = timedelta(minutes=5)


async def owner_dm(w: FeishuWorld) -> int:
    async with w.app.services.db.read() as tx:
        conv = await tx.scalar(select(Conversation.id).where(Conversation.chat_id == "oc_owner_dm"))
    assert conv is not None
    return int(conv)


async def another_replica_takes_over(w: FeishuWorld, conversation_id: int) -> None:
    """A live Host `OTHER` takes the conversation's lease, as the first replica back after an
    outage does with a replica it saw gone."""
    now = utcnow()
    async with w.app.services.db.write() as tx:
        await leases.acquire(tx, claims.host_lease_name(OTHER), OTHER, LONG, now)
        await tx.execute(
            update(Lease)
            .where(Lease.name == bot_worker.lease_name(conversation_id))
            .values(owner=OTHER, expires_at=now + LONG)
        )


async def the_other_replica_dies(w: FeishuWorld) -> None:
    async with w.app.services.db.write() as tx:
        await tx.execute(
            update(Lease)
            .where(Lease.name == claims.host_lease_name(OTHER))
            .values(expires_at=utcnow() - timedelta(seconds=1))
        )
    await w.app.services.notifier.notify("inbox")


async def undelivered(w: FeishuWorld) -> int:
    async with w.app.services.db.read() as tx:
        count = await tx.scalar(
            select(func.count(InboxItem.id)).where(
                InboxItem.delivered_at.is_(None), InboxItem.conversation_id.is_not(None)
            )
        )
    return int(count or 0)


async def outbox_rows(w: FeishuWorld) -> int:
    """The replies written (not the receipt reactions, written as a turn starts)."""
    replies = OutboxMessage.content_type.not_in(("reaction", "unreaction"))
    async with w.app.services.db.read() as tx:
        return int(await tx.scalar(select(func.count(OutboxMessage.id)).where(replies)) or 0)


async def stopped(caplog: pytest.LogCaptureFixture) -> None:
    async def logged() -> bool:
        return any("was taken over" in r.getMessage() for r in caplog.records)

    await wait_until(logged, what="the turn to stop, taken over")


@pytest.fixture(autouse=True)
def a_short_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    """A conversation held elsewhere is claimed again after a moment, not after seconds."""
    monkeypatch.setattr(bot_worker, "HELD_ELSEWHERE", timedelta(seconds=0.2))


async def test_a_turn_taken_over_mid_turn_sends_no_reply_and_leaves_the_batch(
    make_world: WorldFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="bot.assistant.turn")
    world: dict[str, FeishuWorld] = {}

    async def taken_over_while_thinking(_m: list[Message], _t: list[ToolSpec]) -> Any:
        w = world["w"]
        await another_replica_takes_over(w, await owner_dm(w))
        return send("send_user", {"text": "pong from the turn that lost it"})

    model = ScriptedProvider(
        [taken_over_while_thinking, send("send_user", {"text": "pong"}), sleep]
    )
    async with bot_world(make_world, model) as w:
        world["w"] = w
        await say(w, "ping")
        await stopped(caplog)
        assert await outbox_rows(w) == 0, "the turn that lost its hold wrote a reply"
        assert await undelivered(w) == 1, "the batch was marked delivered by the wrong turn"
        await the_other_replica_dies(w)  # its liveness lapses: the conversation is free
        assert await replies(w, 1) == ["pong"]
    assert len(model.requests) == 3


async def test_a_turn_taken_over_before_it_ends_logs_nothing_and_its_reply_stays_once(
    make_world: WorldFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """The reply went out before the takeover; the turn's last transaction is refused, so the
    batch is answered again by the next holder, under the same reply key: the user sees it
    once (as after a crash mid-turn)."""
    caplog.set_level(logging.WARNING, logger="bot.assistant.turn")
    world: dict[str, FeishuWorld] = {}

    async def taken_over_before_sleeping(_m: list[Message], _t: list[ToolSpec]) -> Any:
        w = world["w"]
        await another_replica_takes_over(w, await owner_dm(w))
        return sleep

    pong = send("send_user", {"text": "pong"})
    model = ScriptedProvider([pong, taken_over_before_sleeping, pong, sleep])
    async with bot_world(make_world, model) as w:
        world["w"] = w
        await say(w, "ping")
        await stopped(caplog)
        assert await undelivered(w) == 1
        await the_other_replica_dies(w)
        assert await replies(w, 1) == ["pong"]
        assert await outbox_rows(w) == 1
    assert len(model.requests) == 4


async def test_a_conversation_another_replica_holds_is_not_claimed_again_at_once(
    make_world: WorldFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its input is ready, but its lease is taken: one try, then a pause, not a claim and a
    refused lease on every wake-up of the Bot. (Input waits for a long quiet window here, and
    a test says when it is over, so the lease is in place before the Bot may look.)"""
    monkeypatch.setattr(bot_worker, "HELD_ELSEWHERE", LONG)
    monkeypatch.setattr(bot_worker, "MAX_DEBOUNCE", LONG.total_seconds())
    tries: list[str] = []
    real_acquire_all = leases.acquire_all

    async def counted_acquire(tx: Any, names: list[str], *args: Any, **kwargs: Any) -> set[str]:
        tries.extend(names)
        return await real_acquire_all(tx, names, *args, **kwargs)

    monkeypatch.setattr(leases, "acquire_all", counted_acquire)  # as a turn's start takes it
    async with bot_world(make_world, ScriptedProvider([]), bot_debounce=LONG.total_seconds()) as w:
        await say(w, "ping")
        conv = await owner_dm(w)
        held = bot_worker.lease_name(conv)
        async with w.app.services.db.write() as tx:  # another replica's turn has it
            # Not counted: every lease is taken through acquire_all, this replica's or not.
            other = [claims.host_lease_name(OTHER), held]
            assert await real_acquire_all(tx, other, OTHER, LONG, utcnow()) == set(other)
        await quiet_window_passes(w)

        async def tried() -> bool:
            return held in tries

        await wait_until(tried, what="one try at the held conversation")
        await say(w, "hi", sender="ou_stranger", chat_id="oc_dm")  # answered without a model
        await quiet_window_passes(w)
        assert len(await replies(w, 1, mid_turn=True)) == 1
        for _ in range(3):
            await w.app.services.notifier.notify("inbox")
        await replies(w, 1, mid_turn=True)
    assert tries.count(held) == 1, tries


async def quiet_window_passes(w: FeishuWorld) -> None:
    """Every waiting input's quiet window is over, as if time had passed."""
    async with w.app.services.db.write() as tx:
        await tx.execute(
            update(InboxItem)
            .where(InboxItem.delivered_at.is_(None))
            .values(created_at=utcnow() - 2 * LONG)
        )
    await w.app.services.notifier.notify("inbox")
