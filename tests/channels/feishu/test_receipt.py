"""The receipt (issue #39 item 1): a "Typing" reaction on each message the Bot's model is to
answer, added before the reply and removed after it, through the outbox, exactly once; a
reaction Feishu refuses never holds the reply back; a failed turn takes it down, a parked
message gets a failure mark."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import select, update

from bot.assistant import failures
from bot.assistant.receipt import FAILED_MARK, TYPING
from bot.assistant.turn import BotTurn
from bot.assistant.turn_context import BatchItem, TurnContext
from bot.channels.feishu import receipt as feishu_receipt
from bot.llm.scripted import ScriptedProvider
from bot.llm.types import Message, ToolSpec
from storage.models import ApiUsage, InboxItem, OutboxMessage
from storage.repos import inbox, outbox
from storage.types import utcnow
from tests.assistant.support import bot_world, quiet, replies, say, say_in_group, send, sleep
from tests.fakes import Reaction
from tests.feishu_world import OWNER, FeishuWorld, WorldFactory
from tests.waiting import wait_until


def _pong() -> ScriptedProvider:
    return ScriptedProvider([send("send_user", {"text": "pong"}), sleep])


def _calls(w: FeishuWorld) -> list[str]:
    """The fake's API calls that touched messages or reactions, in order, as `METHOD kind`."""
    seen: list[str] = []
    for r in w.fake.requests:
        if "/reactions" in r.path:
            seen.append(f"{r.method} reaction")
        elif r.path.startswith("/open-apis/im/v1/messages") and r.method == "POST":
            seen.append("POST message")
    return seen


async def _rows(w: FeishuWorld, kind: str) -> list[OutboxMessage]:
    async with w.app.services.db.read() as tx:
        found = await tx.scalars(
            select(OutboxMessage)
            .where(OutboxMessage.content_type == kind)
            .order_by(OutboxMessage.id)
        )
        return list(found.all())


async def test_a_dm_ping_gets_the_receipt_before_the_reply_and_loses_it_after(
    make_world: WorldFactory,
) -> None:
    async with bot_world(make_world, _pong()) as w:
        event = await say(w, "ping")
        assert (await w.events.post(event))[0] == 200  # Feishu delivers it again
        assert await replies(w, 1) == ["pong"]
        message_id = event["event"]["message"]["message_id"]
        log = [(e.action, e.message_id, e.emoji_type) for e in w.fake.reactions_log]
        assert log == [("add", message_id, TYPING), ("remove", message_id, TYPING)]
        assert _calls(w) == ["POST reaction", "POST message", "DELETE reaction"]
        assert w.fake.reactions_on(message_id) == []
        [row] = await _rows(w, "reaction")
        assert row.state == outbox.SENT
        assert row.platform_message_ids == [w.fake.reactions_log[0].reaction_id]
        assert [r.state for r in await _rows(w, "unreaction")] == [outbox.SENT]

        async def counted() -> bool:  # in the API quota, like every other call
            async with w.app.services.db.read() as tx:
                apis = await tx.scalars(select(ApiUsage.api).where(ApiUsage.api.like("%reaction%")))
                return sorted(apis.all()) == [
                    "im.message.reaction.create",
                    "im.message.reaction.delete",
                ]

        await wait_until(counted, what="the reaction calls counted in api_usage")


async def test_a_reclaimed_reaction_row_reuses_the_reaction_an_earlier_attempt_added(
    make_world: WorldFactory,
) -> None:
    async with bot_world(make_world, None) as w:
        target = w.message("hi", chat_id="oc_dm")["event"]["message"]["message_id"]
        app_id = str(w.app.services.settings.feishu_app_id)
        landed = Reaction("r-earlier", target, TYPING, app_id, "app", 0)  # the lost attempt's
        w.fake.reactions[landed.reaction_id] = landed
        async with w.app.services.db.write() as tx:
            row_id = await outbox.enqueue(
                tx, idempotency_key="rx-test-1", platform="feishu", chat_id="oc_dm",
                content_type="reaction", content={"message_id": target, "emoji": TYPING},
                now=utcnow(),
            )  # fmt: skip
            # As if claimed once before, by a process that died before settling it.
            await tx.execute(
                update(OutboxMessage).where(OutboxMessage.id == row_id).values(attempts=1)
            )
        w.app.services.notifier.wake_local(outbox.OUTBOX_TOPIC)
        await quiet(w)
        [row] = await _rows(w, "reaction")
    assert row.state == outbox.SENT and row.platform_message_ids == ["r-earlier"]
    assert w.fake.reactions_log == []  # nothing added a second time
    assert [r.reaction_id for r in w.fake.reactions_on(target)] == ["r-earlier"]


async def test_a_reaction_feishu_refuses_does_not_stop_the_reply_or_bother_the_owner(
    make_world: WorldFactory,
) -> None:
    async with bot_world(make_world, _pong()) as w:
        event = w.message("ping", chat_id="oc_owner_dm", sender_open_id=OWNER)
        message_id = event["event"]["message"]["message_id"]
        path = f"/open-apis/im/v1/messages/{message_id}/reactions"
        w.fake.fail_next(path, method="POST", times=100, http_status=500, code=1500)
        assert (await w.events.post(event))[0] == 200
        assert await replies(w, 1) == ["pong"]  # and nothing else: no notice of the failure
        [row] = await _rows(w, "reaction")
        async with w.app.services.db.read() as tx:
            notices = await tx.scalars(select(InboxItem).where(InboxItem.kind == "system"))
            assert notices.all() == []
    assert row.state == outbox.FAILED and "1500" in (row.last_error or "")
    assert w.fake.calls(path, "POST") == 2  # one delivery, one quick retry
    assert w.fake.reactions_on(message_id) == []


async def test_no_receipt_when_the_setting_is_off(make_world: WorldFactory) -> None:
    async with bot_world(make_world, _pong(), feishu_receipt=False) as w:
        await say(w, "ping")
        assert await replies(w, 1) == ["pong"]
        assert await _rows(w, "reaction") == []
    assert _calls(w) == ["POST message"]


async def test_no_receipt_for_a_group_message_not_addressed_or_a_slash_command(
    make_world: WorldFactory,
) -> None:
    async with bot_world(make_world, None) as w:
        await say(w, "talking among us", sender="ou_member", chat_id="oc_group", chat_type="group")
        await say_in_group(w, "/help")
        await replies(w, 1)  # the help
        assert await _rows(w, "reaction") == []
    assert "POST reaction" not in _calls(w)


POISON = "poison"


@pytest.fixture
def poisoned(monkeypatch: pytest.MonkeyPatch) -> None:
    real_think = BotTurn._think

    async def think(self: BotTurn, ctx: TurnContext, items: list[BatchItem], context: Any) -> None:
        if any(POISON in item.text for item in items):
            raise OverflowError("a bug in the turn")
        await real_think(self, ctx, items, context)

    monkeypatch.setattr(BotTurn, "_think", think)
    monkeypatch.setattr(failures, "RETRY_FIRST", 0.05)


async def _parked(w: FeishuWorld) -> bool:
    async with w.app.services.db.read() as tx:
        return len(await inbox.parked(tx, 10)) == 1


async def test_a_failed_turn_takes_the_receipt_down_and_a_parked_message_gets_the_mark(
    make_world: WorldFactory, poisoned: None
) -> None:
    async with bot_world(make_world, None, bot_max_attempts=2) as w:
        await say_in_group(w, POISON)
        await wait_until(lambda: _parked(w), what="the poisoned message parked")
        await quiet(w)
    [message_id] = {e.message_id for e in w.fake.reactions_log}
    log = [(e.action, e.emoji_type) for e in w.fake.reactions_log]
    assert log == [
        ("add", TYPING),  # the first try
        ("remove", TYPING),
        ("add", TYPING),  # the retry, a reaction of its own
        ("remove", TYPING),
        ("add", FAILED_MARK),
    ]
    assert [r.emoji_type for r in w.fake.reactions_on(message_id)] == [FAILED_MARK]


async def test_a_message_that_joins_a_running_turn_gets_the_receipt_too(
    make_world: WorldFactory,
) -> None:
    arrived = asyncio.Event()

    async def sleep_after_more_input(_m: list[Message], _t: list[ToolSpec]) -> object:
        await arrived.wait()
        return sleep  # refused: new input arrived, and it joins the turn

    provider = ScriptedProvider(
        [sleep_after_more_input, send("send_user", {"text": "handled both"}), sleep]
    )
    async with bot_world(make_world, provider) as w:
        first = await say(w, "hello")
        await wait_until(lambda: _asked(provider), what="the turn to reach the model")
        second = await say(w, "also this")

        async def both_waiting() -> bool:
            return await w.inbox_items() == 2

        await wait_until(both_waiting, what="the second message in the inbox")
        arrived.set()
        assert await replies(w, 1) == ["handled both"]
    ids = [e["event"]["message"]["message_id"] for e in (first, second)]
    log = [(e.action, e.message_id) for e in w.fake.reactions_log]
    assert log == [("add", ids[0]), ("add", ids[1]), ("remove", ids[0]), ("remove", ids[1])]


async def test_a_reaction_call_that_hangs_holds_the_reply_back_only_briefly(
    make_world: WorldFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(feishu_receipt, "DEADLINE", 0.3)
    async with bot_world(make_world, _pong()) as w:
        event = w.message("ping", chat_id="oc_owner_dm", sender_open_id=OWNER)
        message_id = event["event"]["message"]["message_id"]
        release, _ = w.fake.hold_next(f"/open-apis/im/v1/messages/{message_id}/reactions")
        try:
            assert (await w.events.post(event))[0] == 200
            assert await replies(w, 1) == ["pong"]  # while the reaction call still hangs
        finally:
            release.set()
        [row] = await _rows(w, "reaction")
    assert row.state == outbox.FAILED and "did not answer" in (row.last_error or "")


async def _asked(provider: ScriptedProvider) -> bool:
    return len(provider.requests) >= 1
