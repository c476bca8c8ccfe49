"""Poison arguments (issue #38): a number no column holds, a digit that only looks like one,
a duration past any calendar. Each gets one line back, and the chat goes on: the next
message in the same chat gets its ordinary answer (the old code failed the turn on such an
argument, and the chat's inbox retried it for ever)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from bot.assistant.turn import NO_MODEL_REPLY
from bot.assistant.why import USAGE as WHY_USAGE
from bot.discovery.commands import USAGE as DISCOVERY_USAGE
from bot.llm.scripted import PlannedReply, ScriptedProvider
from bot.llm.types import Message
from bot.matters.commands import USAGE as MATTERS_USAGE
from bot.memory.recall import NOT_VISIBLE
from tests.assistant.support import bot_world, replies, say, say_in_group, send
from tests.assistant.support import sleep as sleep_step
from tests.feishu_world import FeishuWorld, WorldFactory

HUGE = "99999999999999999999999"


async def in_group(w: FeishuWorld, text: str) -> None:
    await say_in_group(w, text, sender="ou_member")


async def in_owner_dm(w: FeishuWorld, text: str) -> None:
    await say(w, text)


POISON = [
    (in_group, f"/why {HUGE}", f"No message {HUGE} of mine here."),
    (in_group, "/why ²", f"Usage: {WHY_USAGE} ('²' is not a number)"),
    (in_group, "/why ٣", f"Usage: {WHY_USAGE} ('٣' is not a number)"),
    (in_group, "/why 1_000", f"Usage: {WHY_USAGE} ('1_000' is not a number)"),
    (in_group, f"/matters show {HUGE}", f"No task #{HUGE}."),
    (in_group, f"/matters cancel {HUGE}", f"No task #{HUGE}."),
    (in_group, "/matters show ²", f"Usage: {MATTERS_USAGE} ('²' is not a task number)"),
    (
        in_owner_dm,
        "/discovery budget ²",
        f"Usage: {DISCOVERY_USAGE} (budget ²: a whole number of tokens a day, e.g. 50000)",
    ),
    (
        in_owner_dm,
        f"/discovery budget {HUGE}",
        f"Usage: {DISCOVERY_USAGE} (budget {HUGE}: at most 1000000000 tokens a day)",
    ),
    (
        in_owner_dm,
        "/discovery every 99999999999d",
        f"Usage: {DISCOVERY_USAGE} (every 99999999999d: at most 7 days)",
    ),
    (
        in_owner_dm,
        "/discovery every ٣٠m",
        f"Usage: {DISCOVERY_USAGE} (every ٣٠m: write a duration like 30m, 2h or 1d)",
    ),
    (
        in_owner_dm,
        "/discovery every 30ſ",  # long s: case-folded, the old pattern took it for 's'
        f"Usage: {DISCOVERY_USAGE} (every 30ſ: write a duration like 30m, 2h or 1d)",
    ),
    (
        in_owner_dm,
        "/discovery quiet ٢٢-٨",
        f"Usage: {DISCOVERY_USAGE} ('٢٢-٨': write quiet hours as HH-HH, e.g. 22-8 (or off))",
    ),
]


@pytest.mark.parametrize(("speak", "poison", "answer"), POISON, ids=[p[1] for p in POISON])
async def test_a_poison_argument_gets_one_line_and_the_chat_goes_on(
    make_world: WorldFactory,
    speak: Callable[[FeishuWorld, str], Awaitable[None]],
    poison: str,
    answer: str,
) -> None:
    async with bot_world(make_world, provider=None) as w:
        await speak(w, poison)
        assert await replies(w, 1) == [answer]
        await speak(w, "hello again")
        assert await replies(w, 2) == [answer, NO_MODEL_REPLY]


async def test_numbers_written_as_people_do_still_work(make_world: WorldFactory) -> None:
    async with bot_world(make_world, provider=None) as w:
        for text in ("/discovery every 2h", "/discovery budget 080000", "/discovery quiet 22-8",
                     "/discovery every 7d", "/why #1"):  # fmt: skip
            await say(w, text)
        assert await replies(w, 5) == [
            "Discovery beats every 120 min.",
            "Discovery may use 80000 tokens a day.",
            "Quiet hours: 22-8.",
            "Discovery beats every 10080 min.",
            "No message 1 of mine here.",
        ]


def tool_result(messages: list[Message]) -> str:
    return messages[-1].content or ""


async def test_a_model_reading_a_ref_no_record_can_have_is_told_so_and_the_turn_ends(
    make_world: WorldFactory,
) -> None:
    seen: list[str] = []

    def answer_after_reading(messages: list[Message], _tools: object) -> PlannedReply:
        seen.append(tool_result(messages))
        return send("send_user", {"text": "I cannot find that message."})

    provider = ScriptedProvider(
        [
            send("memory_original", {"ref": f"rec-{HUGE}"}),
            answer_after_reading,
            send("memory_original", {"ref": "rec-1", "offset": int(HUGE)}),
            answer_after_reading,
            sleep_step,
            send("send_user", {"text": "hello"}),
            sleep_step,
        ]
    )
    async with bot_world(make_world, provider) as w:
        await say(w, "show me that message")
        assert await replies(w, 2) == ["I cannot find that message."] * 2
        await say(w, "hi")
        assert (await replies(w, 3))[2] == "hello"
    assert f"error: {NOT_VISIBLE}" in seen[0]
    assert "error: invalid arguments: offset: Input should be less than or equal to" in seen[1]
    assert len(provider.requests) == 7  # each step once: no turn failed and was retried


@pytest.mark.parametrize("unstorable", ["\x00", "\ud800"], ids=["NUL", "lone surrogate"])
async def test_a_model_argument_no_database_can_store_is_told_so_and_the_turn_ends(
    make_world: WorldFactory, unstorable: str
) -> None:
    seen: list[str] = []

    def answer_after_the_error(messages: list[Message], _tools: object) -> PlannedReply:
        seen.append(tool_result(messages))
        return send("send_user", {"text": "Here it is."})

    provider = ScriptedProvider(
        [
            send("send_user", {"text": f"Here{unstorable} it is."}),
            answer_after_the_error,
            sleep_step,
        ]
    )
    async with bot_world(make_world, provider) as w:
        await say(w, "say it")
        assert await replies(w, 1) == ["Here it is."]
    assert "error: invalid arguments: text: holds a NUL or a lone surrogate" in seen[0]
    assert len(provider.requests) == 3
