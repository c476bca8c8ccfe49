"""The Bot worker when its own database writes fail: a failed lease write leaves no mark
behind, so the conversation is answered once the database answers again (before the fix, the
process skipped that conversation until it was restarted)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from bot.assistant import worker as bot_worker
from bot.llm.scripted import ScriptedProvider
from tests.assistant.support import bot_world, replies, say
from tests.feishu_world import WorldFactory

send = ScriptedProvider.tool_call


async def test_a_failed_lease_write_does_not_strand_the_conversation(
    make_world: WorldFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_acquire = bot_worker.leases.acquire
    failures: list[str] = []

    async def acquire_failing_once(*args: Any, **kwargs: Any) -> bool:
        if not failures and str(args[1]).startswith("bot:conversation:"):
            failures.append(args[1])
            raise OperationalError("UPDATE leases", {}, Exception("the database restarted"))
        return await real_acquire(*args, **kwargs)

    monkeypatch.setattr(bot_worker.leases, "acquire", acquire_failing_once)
    model = ScriptedProvider([send("send_user", {"text": "pong"}), send("sleep", {})])
    async with bot_world(make_world, model) as w:
        await say(w, "ping")
        assert await replies(w, 1) == ["pong"]
    assert failures, "the lease write never failed: the test did not test anything"
