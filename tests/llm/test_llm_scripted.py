"""`ScriptedProvider` and the value types."""

from __future__ import annotations

import pytest

from bot.llm import Completion, Message, ToolCall, ToolSpec, Usage
from bot.llm.scripted import ScriptedProvider, ScriptExhausted

TOOLS = [ToolSpec("send_user", "Send a message to the user.", {"type": "object"})]


async def test_steps_are_played_in_order_and_requests_recorded() -> None:
    provider = ScriptedProvider(
        [ScriptedProvider.tool_call("send_user", {"text": "hi"}), ScriptedProvider.text("done")]
    )
    history = [Message.user("greet me")]

    first = await provider.complete(history, TOOLS)
    [call] = first.tool_calls
    assert (call.name, call.arguments, call.id) == ("send_user", {"text": "hi"}, "call_1")
    assert first.finish_reason == "tool_calls"
    history += [first.as_message(), Message.tool(call.id, "sent")]

    second = await provider.complete(history, TOOLS, max_tokens=100)
    assert second.text == "done" and second.tool_calls == []

    # requests are snapshots: later mutation of `history` does not rewrite them
    assert [len(msgs) for msgs, _ in provider.requests] == [1, 3]
    assert provider.requests[0][1] == TOOLS
    assert provider.options[1]["max_tokens"] == 100
    provider.assert_exhausted()


async def test_running_out_raises_script_exhausted() -> None:
    provider = ScriptedProvider([ScriptedProvider.text("only one")])
    await provider.complete([Message.user("a")])
    with pytest.raises(ScriptExhausted, match=r"ran out after 1 step.*'b'"):
        await provider.complete([Message.user("b")])
    assert isinstance(ScriptExhausted("x"), AssertionError)
    assert len(provider.requests) == 2


async def test_exceptions_and_exception_classes_are_raised() -> None:
    provider = ScriptedProvider([RuntimeError("boom"), TimeoutError])
    with pytest.raises(RuntimeError, match="boom"):
        await provider.complete([Message.user("a")])
    with pytest.raises(TimeoutError):
        await provider.complete([Message.user("a")])


async def test_callables_react_to_the_input() -> None:
    def echo(messages: list[Message], tools: list[ToolSpec]) -> Completion:
        return Completion(
            text=f"{messages[-1].content} ({len(tools)} tools)",
            tool_calls=[],
            usage=Usage(1, 1),
            model="echo",
            finish_reason="stop",
        )

    async def shout(messages: list[Message], tools: list[ToolSpec]) -> Completion:
        return Completion(str(messages[-1].content).upper(), [], Usage(), "shout", "stop")

    provider = ScriptedProvider([echo, shout])
    assert (await provider.complete([Message.user("hey")], TOOLS)).text == "hey (1 tools)"
    assert (await provider.complete([Message.user("hey")])).text == "HEY"


async def test_literal_completions_are_returned_as_is() -> None:
    planned = Completion("exact", [], Usage(7, 8), "m", "length")
    provider = ScriptedProvider([planned])
    assert await provider.complete([Message.user("x" * 1000)]) is planned


async def test_usage_is_estimated_at_four_characters_a_token() -> None:
    provider = ScriptedProvider([ScriptedProvider.text("x" * 40), ScriptedProvider.text("y")])
    first = await provider.complete([Message.system("s" * 100), Message.user("u" * 300)])
    assert first.usage == Usage(input_tokens=100, output_tokens=10)
    second = await provider.complete([Message.user("u" * 4000)], TOOLS)
    assert second.usage.input_tokens > 1000  # tool schemas count as input too
    assert second.usage.output_tokens == 1


async def test_tool_call_with_raw_invalid_arguments_and_multiple_calls() -> None:
    provider = ScriptedProvider(
        [
            ScriptedProvider.tool_call("send_user", '{"text": ', id="bad"),
            ScriptedProvider.tool_calls(("a", {"x": 1}), ("b", {})),
        ]
    )
    broken = (await provider.complete([Message.user("x")])).tool_calls[0]
    assert broken.id == "bad" and broken.arguments == {} and broken.parse_error
    a, b = (await provider.complete([Message.user("x")])).tool_calls
    assert (a.name, a.arguments, b.name, b.arguments) == ("a", {"x": 1}, "b", {})
    assert a.id != b.id


def test_tool_call_parsing() -> None:
    assert ToolCall.from_raw("1", "f", '{"a": [1]}').arguments == {"a": [1]}
    assert ToolCall.from_raw("1", "f", None).arguments == {}
    bad = ToolCall.from_raw("1", "f", "not json")
    assert bad.arguments == {} and bad.raw_arguments == "not json" and not bad.ok
    assert ToolCall("1", "f", {"a": 1}).arguments_json() == '{"a": 1}'


def test_message_defaults_are_not_shared() -> None:
    a, b = Message("user", "a"), Message("user", "b")
    assert a.tool_calls == [] and a.tool_calls is not b.tool_calls
