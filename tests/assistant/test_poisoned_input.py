"""One message that always makes the Bot's turn fail: it is backed off, tried again on its own
and parked after `bot_max_attempts` tries; the chat gets one line about it and the owner is
told; every other message in that chat is answered meanwhile; the log stays a few lines; and
a restart over the same database does not try it again. (Before: the conversation was ready
again the moment its turn failed, ~140 failures a second, and nothing after it was answered.)
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession

from bot.assistant import failures
from bot.assistant import worker as bot_worker
from bot.assistant.turn import NO_MODEL_REPLY, BotTurn
from bot.assistant.turn_context import BatchItem, TurnContext
from storage.models import InboxItem
from storage.repos import inbox
from tests.assistant.support import bot_world, quiet, replies, say, say_in_group
from tests.feishu_world import FeishuWorld, WorldFactory
from tests.waiting import wait_until

POISON = "poison"


@pytest.fixture
def poisoned_turns(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every batch the model step sees; one holding the poison raises, like a parser's bug."""
    seen: list[list[str]] = []
    real_think = BotTurn._think

    async def think(self: BotTurn, ctx: TurnContext, items: list[BatchItem], context: Any) -> None:
        seen.append([item.text for item in items])
        if any(POISON in item.text for item in items):
            raise OverflowError("Python int too large to convert to SQLite INTEGER")
        await real_think(self, ctx, items, context)

    monkeypatch.setattr(BotTurn, "_think", think)
    monkeypatch.setattr(failures, "RETRY_FIRST", 0.05)  # the backoff of the test's item, short
    return seen


async def _parked(w: FeishuWorld) -> list[InboxItem]:
    async with w.app.services.db.read() as tx:
        return await inbox.parked(tx, 10)


async def _parked_once(w: FeishuWorld) -> bool:
    return len(await _parked(w)) == 1


async def test_an_always_failing_message_is_parked_and_the_chat_goes_on(
    make_world: WorldFactory, poisoned_turns: list[list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    async with bot_world(make_world, None, bot_max_attempts=3) as w:
        await say(w, "hi")  # the owner's DM, where the owner is told
        await replies(w, 1)
        await say_in_group(w, POISON)
        await wait_until(lambda: _failed_once(w), what="the poisoned turn's first failure")
        await say_in_group(w, "ping")  # answered while the poison waits out its backoff
        await wait_until(lambda: _sent(w, NO_MODEL_REPLY), what="the answer to the next message")
        await wait_until(lambda: _parked_once(w), what="the poisoned item parked")
        await quiet(w)
        [item] = await _parked(w)
        sent = [m.text or m.content for m in w.fake.sent]
    assert item.attempts == 3
    assert item.last_error == "OverflowError: Python int too large to convert to SQLite INTEGER"
    assert [POISON in " ".join(batch) for batch in poisoned_turns].count(True) == 3
    assert sum(1 for text in sent if "could not handle this message" in text) == 1
    [notice] = [text for text in sent if "is parked" in text]
    assert f"inbox item {item.id}" in notice and "OverflowError" in notice
    assert NO_MODEL_REPLY in sent
    records = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(records) == 3, [r.getMessage() for r in records]  # one a try, nothing more
    assert not any(r.exc_info or "\n" in r.getMessage() for r in records)  # a line each
    assert "(at tests/assistant/test_poisoned_input.py:" in records[0].getMessage()  # where


async def test_a_good_message_batched_with_a_poisoned_one_is_answered_on_its_own(
    make_world: WorldFactory, poisoned_turns: list[list[str]]
) -> None:
    async with bot_world(make_world, None, bot_max_attempts=2, bot_debounce=0.5) as w:
        await say_in_group(w, POISON)
        await say_in_group(w, "hello")  # in the same burst: one batch with the poison
        await wait_until(lambda: _parked_once(w), what="the poisoned item parked")
        await quiet(w)
        sent = [m.text or m.content for m in w.fake.sent]
    assert [POISON, "hello"] in poisoned_turns, "the two never came in one batch"
    assert ["hello"] in poisoned_turns  # tried again on its own
    assert NO_MODEL_REPLY in sent


async def test_a_restart_does_not_try_a_parked_item_again(
    make_world: WorldFactory, poisoned_turns: list[list[str]]
) -> None:
    async with bot_world(make_world, None, bot_max_attempts=1) as w:
        await say_in_group(w, POISON)
        await wait_until(lambda: _parked_once(w), what="the poisoned item parked")
        await quiet(w)
    tries = len(poisoned_turns)
    async with bot_world(make_world, None, bot_max_attempts=1, name="b") as w:
        await say_in_group(w, "ping")
        await replies(w, 2)  # the parked line (first run) and the answer
        assert len(poisoned_turns) == tries + 1  # only the new message was taken
        assert poisoned_turns[-1] == ["ping"]


async def test_a_failed_turn_keeps_its_conversation_until_its_lease_is_given_back(
    make_world: WorldFactory, poisoned_turns: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next turn in the chat used to be claimable while the failed one was still giving
    its lease back: the give-back then took the new turn's lease (one process, one owner),
    and the new turn stopped as "taken over", its answer thrown away (a flaky
    `test_an_always_failing_message_is_parked_and_the_chat_goes_on`)."""
    real_release = bot_worker.leases.release
    busy: set[int] = set()  # the worker's own, once it runs
    marked_at_release: list[bool] = []

    async def release(tx: AsyncSession, name: str, owner: str) -> bool:
        marked_at_release.append(int(name.rsplit(":", 1)[1]) in busy)
        return await real_release(tx, name, owner)

    monkeypatch.setattr(bot_worker.leases, "release", release)
    async with bot_world(make_world, None, bot_max_attempts=1) as w:
        worker = w.app.services.host.status()["bot"].worker
        assert isinstance(worker, bot_worker.BotWorker)
        busy = worker._busy
        await say_in_group(w, POISON)
        await wait_until(lambda: _parked_once(w), what="the poisoned item parked")
        await quiet(w)
    assert marked_at_release == [True]


async def _failed_once(w: FeishuWorld) -> bool:
    async with w.app.services.db.read() as tx:
        attempts = await tx.scalars(select(InboxItem.attempts).where(InboxItem.attempts > 0))
        return bool(attempts.all())


async def _sent(w: FeishuWorld, text: str) -> bool:
    return any((m.text or m.content) == text for m in w.fake.sent)


async def test_a_parked_item_is_shown_with_its_error_on_status_and_the_status_page(
    make_world: WorldFactory, poisoned_turns: list[list[str]]
) -> None:
    async with bot_world(make_world, None, bot_max_attempts=1) as w:
        await say_in_group(w, POISON)
        await wait_until(lambda: _parked_once(w), what="the poisoned item parked")
        await quiet(w)
        [item] = await _parked(w)
        await say(w, "/status")
        status = (await replies(w, 2))[-1]  # after the chat's parked line
        async with w.app.http.get(f"{w.app.url}/status.json") as resp:
            assert resp.status == 200
            data = await resp.json()
        async with w.app.http.get(f"{w.app.url}/status") as resp:
            page = await resp.text()
    assert "parked: 1 input(s)" in status
    assert f"item {item.id} (user_message" in status and "OverflowError" in status
    [shown] = data["parked"]
    assert shown["red"] and shown["name"].startswith(f"item {item.id} ")
    assert shown["detail"] == "OverflowError: Python int too large to convert to SQLite INTEGER"
    assert "Parked input" in page and "Python int too large" in page


async def test_a_turn_failed_by_a_lost_database_connection_is_retried_and_never_parked(
    make_world: WorldFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A PostgreSQL restart kills the turn's connection mid-turn: that is the database's
    failure, not the message's. It is backed off like any failure but not counted, so a
    restart longer than the tries' backoff parks no one's message; the retry answers it."""
    tries: list[str] = []
    real_think = BotTurn._think

    async def think(self: BotTurn, ctx: TurnContext, items: list[BatchItem], context: Any) -> None:
        tries.append(" ".join(item.text for item in items))
        if len(tries) <= 3:  # more tries than bot_max_attempts allows
            raise DBAPIError(
                "SELECT 1", None, ConnectionResetError("server closed"), connection_invalidated=True
            )
        await real_think(self, ctx, items, context)

    monkeypatch.setattr(BotTurn, "_think", think)
    monkeypatch.setattr(failures, "RETRY_FIRST", 0.05)
    async with bot_world(make_world, None, bot_max_attempts=2) as w:
        await say_in_group(w, "ping")
        await wait_until(lambda: _sent(w, NO_MODEL_REPLY), what="the answer after the outage")
        await quiet(w)
        assert await _parked(w) == []
        async with w.app.services.db.read() as tx:
            item = (await tx.scalars(select(InboxItem))).one()
    assert len(tries) == 4
    assert item.attempts == 0 and item.delivered_at is not None
    assert item.last_error is not None and "server closed" in item.last_error
