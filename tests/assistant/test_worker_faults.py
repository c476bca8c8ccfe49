"""The Bot worker when its own database writes fail: a failed lease write leaves no mark
behind, so the conversation is answered once the database answers again (before the fix, the
process skipped that conversation until it was restarted); so does a failed renewal."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from bot.assistant import worker as bot_worker
from bot.llm.scripted import ScriptedProvider
from bot.llm.types import Message, ToolSpec
from tests.assistant.support import bot_world, replies, say, sleep
from tests.feishu_world import WorldFactory

send = ScriptedProvider.tool_call


async def test_a_failed_lease_write_does_not_strand_the_conversation(
    make_world: WorldFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_acquire = bot_worker.leases.acquire_all  # as a turn's start takes its conversation
    failures: list[str] = []

    async def acquire_failing_once(*args: Any, **kwargs: Any) -> set[str]:
        if not failures and any(str(n).startswith("bot:conversation:") for n in args[1]):
            failures.extend(args[1])
            raise OperationalError("INSERT INTO leases", {}, Exception("the database restarted"))
        return await real_acquire(*args, **kwargs)

    monkeypatch.setattr(bot_worker.leases, "acquire_all", acquire_failing_once)
    model = ScriptedProvider([send("send_user", {"text": "pong"}), sleep])
    async with bot_world(make_world, model) as w:
        await say(w, "ping")
        assert await replies(w, 1) == ["pong"]
    assert failures, "the lease write never failed: the test did not test anything"


async def test_a_lease_renewal_that_fails_mid_turn_does_not_strand_the_conversation(
    make_world: WorldFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The renewal's failure is logged and the turn ends as usual (the renewing task used to
    die with the error, which the turn's cleanup re-raised before it removed the busy mark)."""
    monkeypatch.setattr(bot_worker, "LEASE_TTL", timedelta(seconds=0.3))  # renewed every 0.1 s
    real_renew = bot_worker.leases.renew
    renewal_failed = asyncio.Event()

    async def first_renewal_fails(*args: Any, **kwargs: Any) -> bool:
        if str(args[1]).startswith("bot:conversation:") and not renewal_failed.is_set():
            renewal_failed.set()
            raise OperationalError("UPDATE leases", {}, Exception("the database restarted"))
        return await real_renew(*args, **kwargs)

    async def answer_once_the_renewal_failed(_m: list[Message], _t: list[ToolSpec]) -> object:
        await renewal_failed.wait()
        return send("send_user", {"text": "pong"})

    monkeypatch.setattr(bot_worker.leases, "renew", first_renewal_fails)
    model = ScriptedProvider(
        [answer_once_the_renewal_failed, sleep, send("send_user", {"text": "pong again"}), sleep]
    )
    async with bot_world(make_world, model) as w:
        await say(w, "ping")
        assert await replies(w, 1) == ["pong"]
        await say(w, "ping again")
        assert await replies(w, 2) == ["pong", "pong again"]
    assert renewal_failed.is_set()
