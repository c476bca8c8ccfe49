"""A model that cannot call tools: the service still answers slash commands, a message gets
one honest line (not silence, not a loop), and /status shows the verdict."""

from __future__ import annotations

import pytest

from bot.assistant.component import Assistant
from bot.assistant.turn import NO_TOOLS_REPLY
from bot.llm.openai_compat import OpenAICompatibleProvider
from tests.assistant.support import answers_sent, replies, say
from tests.fakes.provider_standins import ProviderStandIn
from tests.feishu_world import WorldFactory


@pytest.mark.parametrize("refuses", [True, False], ids=["refuses-tools", "ignores-tools"])
async def test_a_model_without_tools_gets_one_line_and_slash_commands_still_answer(
    make_world: WorldFactory, refuses: bool
) -> None:
    async with ProviderStandIn(refuse_tools=refuses, models=["gemma3:4b"]) as server:
        provider = OpenAICompatibleProvider(
            server.base_url, server.api_key, "gemma3:4b", attempts=1
        )
        async with make_world(bot=Assistant(), model_provider=provider, bot_debounce=0.0) as w:
            await say(w, "/help")
            [help_text] = await replies(w, 1)
            await say(w, "/status")
            before = (await replies(w, 2))[1]
            await say(w, "hello, what is on today?")
            third = (await replies(w, 3))[2]
            await say(w, "/status")
            after = (await replies(w, 4))[3]
            sent = [m.text for m in answers_sent(w)]
            chat_requests = len(server.requests)
    assert "/help" in help_text and "/status" in help_text
    assert "tool calls: not seen yet" in before
    line = NO_TOOLS_REPLY.format(model="gemma3:4b")
    assert third == line and sent.count(line) == 1
    assert chat_requests == 1  # one model call for the message: no retry, no loop
    reason = "refused tools" if refuses else "answered without calling the tool"
    assert "tool calls: NOT working" in after and f"model gemma3:4b {reason}" in after, after
