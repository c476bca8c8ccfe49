"""The one model client against a stand-in of every provider family (tests/fakes/
model_providers.py, which cites each family's docs), streamed and not: what each endpoint
documents sending comes out of `ModelClient.complete` the same way."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from bot.llm import MemoryRecorder, Message, ModelClient, ToolSpec
from bot.llm.openai_compat import OpenAICompatibleProvider
from bot.llm.recovery import CONTINUE_PROMPT, CUT_MARK
from bot.llm.types import ModelRefused, ModelRequestRejected
from tests.fakes.model_providers import FAMILIES, OLLAMA_NO_TOOLS, ProviderFamily
from tests.fakes.openai_server import FakeOpenAIServer
from tests.llm.conftest import FAST

WEATHER = ToolSpec(
    "get_weather",
    "Weather of a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
HELLO = [Message.system("You are terse."), Message.user("hi")]
THOUGHT = "the user greets me; I should greet back"


@dataclass
class Stand:
    family: ProviderFamily
    server: FakeOpenAIServer
    client: ModelClient
    recorder: MemoryRecorder
    streamed: bool


@pytest.fixture(
    params=[(f, s) for f in FAMILIES for s in (False, True)],
    ids=lambda p: f"{p[0].name}-{'stream' if p[1] else 'whole'}",
)
async def stand(request: pytest.FixtureRequest) -> AsyncIterator[Stand]:
    family, streamed = request.param
    async with family.serve() as server:
        provider = OpenAICompatibleProvider(
            server.base_url,
            server.api_key,
            family.model,
            stream="on" if streamed else "off",
            **FAST,
        )
        if family.thinks_only_streamed and not streamed:  # learnt once a process (below)
            family.reply(server, "warming up")
            await provider.complete(HELLO)
            server.log.clear()
        recorder = MemoryRecorder()
        yield Stand(family, server, ModelClient(provider, recorder), recorder, streamed)
        await provider.aclose()


def sent_streaming(stand: Stand) -> bool:
    return all(bool(body.get("stream")) == stand.streamed for body in stand.server.requests)


async def test_reasoning_never_becomes_the_answer(stand: Stand) -> None:
    stand.family.reply(stand.server, "Hello there.", reasoning=THOUGHT)
    completion = await stand.client.complete(HELLO, purpose="bot_turn")
    assert completion.text == "Hello there."
    assert stand.family.reasoning == "none" or completion.reasoning == THOUGHT
    assert "think" not in (completion.text or "")
    assert sent_streaming(stand)


async def test_several_tool_calls_come_in_order_and_slips_are_repaired(stand: Stand) -> None:
    stand.family.reply(
        stand.server,
        None,
        calls=[
            ("get_weather", '```json\n{"city": "Paris"}\n```'),
            ("get_weather", "{'city': 'Oslo',}"),
            ("get_weather", '{"city": "Rome"} I hope this helps'),
        ],
    )
    completion = await stand.client.complete(
        [Message.user("weather in Paris, Oslo, Rome?")], [WEATHER], purpose="bot_turn"
    )
    assert [c.arguments["city"] for c in completion.tool_calls] == ["Paris", "Oslo", "Rome"]
    assert all(c.ok for c in completion.tool_calls)
    assert len(stand.server.requests) == 1


async def test_unrepairable_tool_arguments_are_asked_for_once_more(stand: Stand) -> None:
    stand.family.reply(stand.server, None, calls=[("get_weather", '{"city": "Par')])
    stand.family.reply(stand.server, None, calls=[("get_weather", {"city": "Paris"})])
    completion = await stand.client.complete(
        [Message.user("weather?")], [WEATHER], purpose="bot_turn"
    )
    assert [c.arguments for c in completion.tool_calls] == [{"city": "Paris"}]
    first, again = stand.server.requests
    note = again["messages"][-1]
    assert note["role"] == "user" and "get_weather" in note["content"]
    assert len(again["messages"]) == len(first["messages"]) + 1


async def test_a_tool_turn_goes_back_as_the_family_needs(stand: Stand) -> None:
    # DeepSeek's thinking mode rejects a tool turn sent back without its reasoning_content;
    # the others must not be sent a field they never used.
    stand.family.reply(
        stand.server, None, reasoning=THOUGHT, calls=[("get_weather", {"city": "X"})]
    )
    stand.family.reply(stand.server, "Sunny.")
    first = await stand.client.complete([Message.user("weather?")], [WEATHER], purpose="t")
    history = [
        Message.user("weather?"),
        first.as_message(),
        Message.tool(first.tool_calls[0].id, "sunny"),
    ]
    second = await stand.client.complete(history, [WEATHER], purpose="t")
    assert second.text == "Sunny."
    echoed = stand.server.requests[1]["messages"][1]
    assert ("reasoning_content" in echoed) == (stand.family.reasoning == "reasoning_content")


async def test_a_cut_answer_is_continued_once_and_joined(stand: Stand) -> None:
    stand.family.reply(stand.server, "The first half, ", finish_reason="length")
    stand.family.reply(stand.server, "and the second half.")
    completion = await stand.client.complete(HELLO, purpose="summary")
    assert completion.text == "The first half, and the second half."
    assert stand.server.requests[1]["messages"][-1]["content"] == CONTINUE_PROMPT
    assert "think" not in stand.server.requests[1]["messages"][-2]["content"]


async def test_an_answer_cut_twice_ends_at_a_sentence_and_says_so(stand: Stand) -> None:
    stand.family.reply(stand.server, "One whole sentence. Then half ", finish_reason="length")
    stand.family.reply(stand.server, "of another that never", finish_reason="length")
    completion = await stand.client.complete(HELLO, purpose="summary")
    assert completion.text == "One whole sentence." + CUT_MARK
    assert len(stand.server.requests) == 2


async def test_429_waits_the_servers_delay_and_retries(stand: Stand) -> None:
    stand.server.fail_next(429, headers={"retry-after": "0"})
    stand.family.reply(stand.server, "Hello.")
    completion = await stand.client.complete(HELLO, purpose="t")
    assert completion.text == "Hello."
    assert len(stand.server.requests) == 2


async def test_a_context_length_error_shrinks_the_input_once(stand: Stand) -> None:
    if stand.family.context_error is None:
        pytest.skip(f"{stand.family.name} documents no context-length error")
    history = [Message.system("You are terse.")]
    for n in range(6):
        history += [Message.user(f"old question {n}"), Message.assistant(f"old answer {n}")]
    history.append(Message.user("the question now"))
    stand.family.too_long(stand.server)
    stand.family.reply(stand.server, "Answered.")
    completion = await stand.client.complete(history, purpose="bot_turn")
    assert completion.text == "Answered."
    too_long, retried = stand.server.requests
    assert len(too_long["messages"]) == 14
    assert [m["content"] for m in retried["messages"]] == ["You are terse.", "the question now"]


async def test_a_context_length_error_twice_is_one_clear_error(stand: Stand) -> None:
    if stand.family.context_error is None:
        pytest.skip(f"{stand.family.name} documents no context-length error")
    stand.family.too_long(stand.server)
    stand.family.too_long(stand.server)
    history = [Message.user("old"), Message.assistant("old"), Message.user("now")]
    with pytest.raises(ModelRequestRejected):
        await stand.client.complete(history, purpose="t")
    assert len(stand.server.requests) == 2


async def test_the_content_filter_is_a_refusal_not_an_answer(stand: Stand) -> None:
    stand.family.refuse(stand.server)
    with pytest.raises(ModelRefused):
        await stand.client.complete(HELLO, purpose="bot_turn")
    assert len(stand.server.requests) == 1  # the same input is refused again: not retried
    [record] = stand.recorder.calls
    assert record.error is not None and "ModelRefused" in record.error


async def test_usage_is_the_servers_or_an_estimate_marked_so(stand: Stand) -> None:
    stand.family.reply(stand.server, "Hello.")
    completion = await stand.client.complete(HELLO, purpose="t")
    [record] = stand.recorder.calls
    if stand.family.usage:
        assert (completion.usage.input_tokens, completion.usage.output_tokens) == (10, 5)
        assert not completion.usage.estimated and not record.usage_estimated
    else:
        assert completion.usage.estimated and record.usage_estimated
        assert completion.usage.input_tokens > 0 and completion.usage.output_tokens > 0


async def test_streaming_reports_progress_as_the_model_writes(stand: Stand) -> None:
    written: list[int] = []

    async def progress(chars: int) -> None:
        written.append(chars)

    stand.family.reply(stand.server, "A longer answer, written in pieces.")
    completion = await stand.client.complete(HELLO, purpose="t", on_progress=progress)
    assert completion.text == "A longer answer, written in pieces."
    if stand.streamed:
        assert len(written) >= 3 and written == sorted(written)
    else:
        assert written == []


@pytest.mark.parametrize("family", FAMILIES[:3], ids=lambda f: f.name)
async def test_auto_streaming_falls_back_once_when_the_server_cannot(
    family: ProviderFamily,
) -> None:
    async with family.serve(streams=False) as server:
        provider = OpenAICompatibleProvider(
            server.base_url, server.api_key, family.model, stream="auto", **FAST
        )
        family.reply(server, "First.")
        family.reply(server, "Second.")
        assert (await provider.complete(HELLO)).text == "First."
        assert (await provider.complete(HELLO)).text == "Second."
        await provider.aclose()
    assert [bool(b.get("stream")) for b in server.requests] == [True, False, False]


async def test_azure_is_called_at_its_deployment_with_its_key_header() -> None:
    async with FAMILIES[1].serve() as server:
        provider = OpenAICompatibleProvider(
            server.base_url, server.api_key, "gpt-4o-deploy", **FAST
        )
        FAMILIES[1].reply(server, "Hi.")
        assert (await provider.complete(HELLO)).text == "Hi."
        await provider.aclose()
    [call] = server.log
    assert call.path == "/openai/deployments/gpt-4o-deploy/chat/completions"
    assert call.headers["api-key"] == server.api_key and "Authorization" not in call.headers


async def test_a_model_without_tools_says_so_in_one_line() -> None:
    async with OLLAMA_NO_TOOLS.serve() as server:
        provider = OpenAICompatibleProvider(server.base_url, server.api_key, "gemma2:2b", **FAST)
        with pytest.raises(ModelRequestRejected) as caught:
            await provider.complete(HELLO, [WEATHER])
        await provider.aclose()
    assert "does not support tools" in str(caught.value)
    assert "\n" not in str(caught.value)


async def test_qwen_thinking_models_unstreamed_are_asked_with_thinking_off_from_then_on() -> None:
    family = next(f for f in FAMILIES if f.thinks_only_streamed)
    async with family.serve() as server:
        provider = OpenAICompatibleProvider(
            server.base_url, server.api_key, family.model, stream="off", **FAST
        )
        family.reply(server, "First.", reasoning=THOUGHT)
        family.reply(server, "Second.")
        assert (await provider.complete(HELLO)).text == "First."
        assert (await provider.complete(HELLO)).text == "Second."
        await provider.aclose()
    assert [b.get("enable_thinking") for b in server.requests] == [None, False, False]
