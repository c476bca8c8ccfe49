"""Feishu in, replies out: exactly once, to the right messages only."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import select, update

from bot.channels import outbox_sender as sender_module
from bot.channels.feishu.channel import FeishuChannel
from bot.runtime import COMPONENTS
from storage.models import OutboxMessage
from storage.repos import inbound, outbox
from storage.types import utcnow
from tests.assistant.support import quiet
from tests.fakes import FeishuFake, Mention
from tests.feishu_world import OWNER, FeishuWorld, WorldFactory
from tests.waiting import wait_until

LEASE = timedelta(seconds=15)


async def _sent(fake: FeishuFake, n: int) -> None:
    async def enough() -> bool:
        return len(fake.sent) >= n

    await wait_until(enough, what=f"{n} messages sent to the Feishu fake")


async def test_redelivered_message_is_answered_once(make_world: WorldFactory) -> None:
    async with make_world() as w:
        event = w.message("hello", chat_id="oc_dm", sender_open_id="ou_user")
        statuses = [(await w.events.post(event))[0] for _ in range(4)]
        assert statuses == [200, 200, 200, 200]
        await _sent(w.fake, 1)
        await quiet(w)  # a wrong second reply would have been sent by now
        assert await w.inbox_items() == 1
        assert [m.text for m in w.fake.sent] == ["echo: hello"]
        assert w.fake.sent[0].reply_to == event["event"]["message"]["message_id"]


@pytest.mark.postgres
async def test_concurrent_delivery_to_two_instances_is_answered_once(
    make_world: WorldFactory, database_url: str
) -> None:
    if "postgresql" not in database_url:
        pytest.skip("two instances share one database only on PostgreSQL")
    async with make_world(name="a") as a, make_world(name="b") as b:
        event = a.message("hi both", chat_id="oc_dm")
        posts = [a.events.post(event), b.events.post(event)] * 2
        statuses = [status for status, _ in await asyncio.gather(*posts)]
        assert statuses == [200] * 4
        await _sent(a.fake, 1)
        await quiet(a)  # one database: b's work shows there too
        assert await a.inbox_items() == 1
        assert [m.text for m in a.fake.sent] == ["echo: hi both"]


async def test_group_message_needs_an_at_mention_and_dm_does_not(
    make_world: WorldFactory,
) -> None:
    async with make_world() as w:
        plain = w.message("talking among us", chat_id="oc_group", chat_type="group")
        mentioned = w.message(
            "@_user_1 what's up",
            chat_id="oc_group",
            chat_type="group",
            mentions=[Mention(open_id="ou_bot", name="Maka")],
        )
        other_mention = w.message(
            "@_user_1 ping",
            chat_id="oc_group",
            chat_type="group",
            mentions=[Mention(open_id="ou_colleague", name="Li")],
        )
        dm = w.message("just me", chat_id="oc_dm")
        for event in (plain, mentioned, other_mention, dm):
            assert (await w.events.post(event))[0] == 200
        await _sent(w.fake, 2)
        await quiet(w)
        assert sorted(m.text or "" for m in w.fake.sent) == ["echo: just me", "echo: what's up"]
        assert await w.inbound() == 4  # everything is kept as history
        async with w.app.services.db.read() as s:
            row = await inbound.get(s, "feishu", plain["event"]["message"]["message_id"])
        assert row is not None and row.status == "history"


async def test_two_hour_old_message_is_stored_and_not_answered(make_world: WorldFactory) -> None:
    async with make_world() as w:
        old = w.message(
            "are you there?", chat_id="oc_dm", create_time=utcnow() - timedelta(hours=2)
        )
        assert (await w.events.post(old))[0] == 200
        fresh = w.message("now?", chat_id="oc_dm")
        assert (await w.events.post(fresh))[0] == 200
        await _sent(w.fake, 1)
        await quiet(w)
        assert [m.text for m in w.fake.sent] == ["echo: now?"]
        async with w.app.services.db.read() as s:
            row = await inbound.get(s, "feishu", old["event"]["message"]["message_id"])
        assert row is not None and row.status == "stale"


async def test_a_rate_limit_storm_delays_replies_but_delivers_each_once(
    make_world: WorldFactory,
) -> None:
    async with make_world() as w:
        w.fake.rate_limit_next("/open-apis/im/v1/messages", times=4, reset_seconds=1)
        texts = [f"question {i}" for i in range(3)]
        for text in texts:
            await w.events.post(w.message(text, chat_id="oc_dm"))
        await _sent(w.fake, 3)
        await quiet(w)
        assert sorted(m.text or "" for m in w.fake.sent) == sorted(f"echo: {t}" for t in texts)
        assert w.fake.calls("/open-apis/im/v1/messages") >= 3 + 4  # the 429s were retried


async def test_a_chats_replies_arrive_in_the_order_written_though_the_first_is_slow(
    make_world: WorldFactory,
) -> None:
    """The sender delivers many rows at once, but one at a time per chat: the later replies
    wait for the first however long Feishu takes with it, while another chat's go out."""
    async with make_world() as w:
        release, arrived = w.fake.hold_next("/open-apis/im/v1/messages", method="POST")
        await w.events.post(w.message("one", chat_id="oc_dm"))

        async def first_reply_at_feishu() -> bool:
            return arrived.is_set()

        await wait_until(first_reply_at_feishu, what="the first reply to reach Feishu")
        for text in ("two", "three"):
            await w.events.post(w.message(text, chat_id="oc_dm"))
        await w.events.post(w.message("elsewhere", chat_id="oc_owner_dm", sender_open_id=OWNER))
        await _sent(w.fake, 1)  # the other chat's reply, while the first is still held
        assert [m.text for m in w.fake.sent] == ["echo: elsewhere"]

        async def later_replies_written() -> bool:
            return await w.outbox_rows(OutboxMessage.chat_id == "oc_dm") == 3

        await wait_until(later_replies_written, what="the replies to two and three written")
        async with w.app.services.db.write() as tx:  # what a sender could take now
            due = await outbox.claim_due(
                tx, platform="feishu", owner="probe", now=utcnow(), limit=10, lease=LEASE
            )
            assert due == []
            await tx.rollback()
        release.set()
        await _sent(w.fake, 4)
        await quiet(w)
        dm = [m.text for m in w.fake.sent if m.chat_id == "oc_dm"]
        assert dm == ["echo: one", "echo: two", "echo: three"]


async def test_a_delivery_longer_than_its_claim_keeps_its_claim_and_sends_once(
    make_world: WorldFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The claim is short (so a delivery that ends badly frees its row in seconds) and renewed
    while the delivery runs: the sender's second task never takes a row still in hand."""
    # A second: the delivery (two 429s a second apart) outlives it twice, and a renewal late
    # by most of a second on a busy machine still holds it.
    monkeypatch.setattr(sender_module, "CLAIM_LEASE", timedelta(seconds=1.0))
    async with make_world() as w:
        w.fake.rate_limit_next("/open-apis/im/v1/messages", times=2, reset_seconds=1)
        await w.events.post(w.message("slow to send", chat_id="oc_dm"))
        await _sent(w.fake, 1)
        await quiet(w)
        async with w.app.services.db.read() as s:
            [row] = (await s.scalars(select(OutboxMessage))).all()
        assert row.state == "sent" and row.attempts == 1  # one delivery, though it took ~2 s
        assert w.fake.calls("/open-apis/im/v1/messages", method="POST") == 3  # 429, 429, sent
        assert [m.text for m in w.fake.sent] == ["echo: slow to send"]


async def test_a_lost_answer_is_retried_with_the_same_uuid_and_not_doubled(
    make_world: WorldFactory,
) -> None:
    async with make_world() as w:
        w.fake.drop_response_after_commit("/open-apis/im/v1/messages", times=1)
        await w.events.post(w.message("once please", chat_id="oc_dm"))
        await wait_until(lambda: _all_sent(w))
        assert [m.text for m in w.fake.sent] == ["echo: once please"]


async def _all_sent(w: FeishuWorld) -> bool:
    return await w.outbox_rows(OutboxMessage.state == "sent") == 1


async def test_sender_killed_after_the_send_reached_feishu_does_not_send_twice(
    make_world: WorldFactory,
) -> None:
    async with make_world() as first:
        host = first.app.services.host
        # Every answer is lost, so the row is never marked sent while this instance lives.
        first.fake.drop_response_after_commit("/open-apis/im/v1/messages", times=1000)
        await first.events.post(first.message("crash test", chat_id="oc_dm"))
        await _sent(first.fake, 1)
        for state in host.status().values():  # the process dies: no drain, no release
            for task in state.tasks:
                task.cancel()

        async def no_release() -> None:
            return None

        host.release_claims = no_release  # type: ignore[method-assign]
    first.fake.clear_faults()

    async with make_world(name="restarted") as second:
        async with second.app.services.db.write() as s:  # time passes: the dead lease lapses
            await s.execute(update(OutboxMessage).values(lease_expires_at=utcnow()))
        await second.app.services.notifier.notify("outbox")
        await wait_until(lambda: _all_sent(second))
        assert [m.text for m in second.fake.sent] == ["echo: crash test"]


async def test_expired_token_is_refreshed_and_the_reply_goes_out(
    make_world: WorldFactory,
) -> None:
    async with make_world() as w:
        await w.events.post(w.message("first", chat_id="oc_dm"))
        await _sent(w.fake, 1)
        w.fake.expire_tokens()
        await w.events.post(w.message("second", chat_id="oc_dm"))
        await _sent(w.fake, 2)
        assert [m.text for m in w.fake.sent] == ["echo: first", "echo: second"]


async def test_undeliverable_reply_is_marked_failed_and_the_owner_told(
    make_world: WorldFactory,
) -> None:
    async with make_world() as w:
        await w.events.post(w.message("hi", chat_id="oc_owner_dm", sender_open_id="ou_owner"))
        await _sent(w.fake, 1)
        w.fake.chats["oc_group"].bot_in_chat = False  # removed from the group meanwhile
        await w.events.post(
            w.message(
                "@_user_1 hello?",
                chat_id="oc_group",
                chat_type="group",
                mentions=[Mention(open_id="ou_bot", name="Maka")],
            )
        )

        async def failed() -> bool:
            return await w.outbox_rows(OutboxMessage.state == "failed") == 1

        await wait_until(failed)
        # the notice reaches the owner's inbox, which the stand-in Bot answers in the DM
        await _sent(w.fake, 2)
        notice = w.fake.sent[-1]
        assert notice.chat_id == "oc_owner_dm"


async def test_reply_in_a_thread_stays_in_the_thread(make_world: WorldFactory) -> None:
    async with make_world() as w:
        root = w.message("root", chat_id="oc_dm")
        await w.events.post(root)
        await _sent(w.fake, 1)
        root_id = root["event"]["message"]["message_id"]
        threaded = w.message(
            "in thread",
            chat_id="oc_dm",
            root_id=root_id,
            parent_id=root_id,
            thread_id="omt_thread1",
        )
        await w.events.post(threaded)
        await _sent(w.fake, 2)
        first, second = w.fake.sent
        assert (first.reply_to, first.reply_in_thread) == (root_id, False)
        assert (second.reply_to, second.reply_in_thread) == (
            threaded["event"]["message"]["message_id"],
            True,
        )


async def test_feishu_api_calls_are_counted_per_day_and_month(make_world: WorldFactory) -> None:
    async with make_world() as w:
        await w.events.post(w.message("count me", chat_id="oc_dm"))
        await _sent(w.fake, 1)
        feishu = next(c for c in w.app.app[COMPONENTS] if isinstance(c, FeishuChannel))
        assert feishu.usage is not None

        async def bot_info_known() -> bool:  # its call was counted before it was made
            return await feishu.readiness() is None

        await wait_until(bot_info_known, what="the bot's open_id to be learned")
        await quiet(w)  # every reply sent: no API call is left in flight
        await feishu.usage.flush()  # counts are written within a second; now, here
        totals = await feishu.usage.totals()
        calls_at_fake = len(w.fake.requests)
        assert totals.today == calls_at_fake  # token, bot info, reply: each counted
        assert totals.this_month == totals.today


async def test_replies_go_out_on_kept_alive_connections(make_world: WorldFactory) -> None:
    """The SDK's own send opens a new HTTP client (and TLS context) per call; ours keeps its
    connection: ten replies, one after the other, go out on one."""
    async with make_world() as w:
        for n in range(10):
            await w.events.post(w.message(f"question {n}", chat_id="oc_dm"))
            await _sent(w.fake, n + 1)
        await quiet(w)
        sends = [r for r in w.fake.requests if r.method == "POST" and r.path.startswith(
            "/open-apis/im/v1/messages")]  # fmt: skip
    assert len(sends) == 10
    assert len({r.peer for r in sends}) == 1, [r.peer for r in sends]


async def test_the_sender_delivers_as_many_replies_at_once_as_the_bot_runs_turns(
    make_world: WorldFactory,
) -> None:
    # With fewer deliveries than turns, the replies of a full turn pool wait in the outbox.
    async with make_world(bot_concurrency=7) as w:
        sender = w.app.services.host.status()["feishu-sender"].worker
        assert sender.concurrency == 7
