"""`ModelClient`: recording, latency, recorder failures; and `build_model_client`."""

from __future__ import annotations

import asyncio
import logging

import pytest

from bot.llm import (
    Completion,
    MemoryRecorder,
    Message,
    ModelCallRecord,
    ModelClient,
    ModelUnavailable,
    NullRecorder,
    ToolSpec,
)
from bot.llm.factory import build_model_client
from bot.llm.openai_compat import OpenAICompatibleProvider
from bot.llm.scripted import ScriptedProvider
from tests.fakes.openai_server import FakeOpenAIServer


class ExplodingRecorder:
    def __init__(self) -> None:
        self.attempts = 0

    async def record(self, call: ModelCallRecord) -> None:
        self.attempts += 1
        raise RuntimeError("database is down")


async def test_success_is_recorded_with_usage_and_purpose() -> None:
    recorder = MemoryRecorder()
    client = ModelClient(ScriptedProvider([ScriptedProvider.text("pong")]), recorder)
    completion = await client.complete([Message.user("ping")], purpose="ping")
    [record] = recorder.calls
    assert record.purpose == "ping"
    assert record.model == "scripted"
    assert record.input_tokens == completion.usage.input_tokens > 0
    assert record.output_tokens == completion.usage.output_tokens > 0
    assert record.latency_ms >= 0
    assert record.error is None


async def test_failure_is_recorded_and_reraised() -> None:
    recorder = MemoryRecorder()
    client = ModelClient(ScriptedProvider([ModelUnavailable("backend down")]), recorder)
    with pytest.raises(ModelUnavailable, match="backend down"):
        await client.complete([Message.user("x")], purpose="chat")
    [record] = recorder.calls
    assert record.error == "ModelUnavailable: backend down"
    assert (record.input_tokens, record.output_tokens) == (0, 0)


async def test_unexpected_errors_are_recorded_too() -> None:
    recorder = MemoryRecorder()
    client = ModelClient(ScriptedProvider([ValueError("bug")]), recorder)
    with pytest.raises(ValueError):
        await client.complete([Message.user("x")], purpose="chat")
    assert recorder.calls[0].error == "ValueError: bug"


async def test_a_failing_recorder_does_not_fail_the_call(caplog: pytest.LogCaptureFixture) -> None:
    recorder = ExplodingRecorder()
    client = ModelClient(ScriptedProvider([ScriptedProvider.text("fine")]), recorder)
    with caplog.at_level(logging.ERROR, logger="bot.llm.client"):
        completion = await client.complete([Message.user("x")], purpose="chat")
    assert completion.text == "fine"
    assert recorder.attempts == 1
    assert "failed to record model call" in caplog.text


async def test_a_failing_recorder_does_not_mask_the_model_error() -> None:
    client = ModelClient(ScriptedProvider([ModelUnavailable("down")]), ExplodingRecorder())
    with pytest.raises(ModelUnavailable, match="down"):
        await client.complete([Message.user("x")], purpose="chat")


async def test_a_failing_recorder_does_not_fail_a_real_call(
    fake_openai: FakeOpenAIServer,
) -> None:
    provider = OpenAICompatibleProvider(fake_openai.base_url, fake_openai.api_key, "fake-model")
    client = ModelClient(provider, ExplodingRecorder())
    try:
        completion = await client.complete([Message.user("x")], purpose="chat")
    finally:
        await client.aclose()
    assert completion.text == "ok"


async def test_cancellation_is_recorded_and_propagates() -> None:
    started = asyncio.Event()

    async def hang(messages: list[Message], tools: list[ToolSpec]) -> Completion:
        started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    recorder = MemoryRecorder()
    client = ModelClient(ScriptedProvider([hang]), recorder)
    task = asyncio.create_task(client.complete([Message.user("x")], purpose="chat"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [r.error for r in recorder.calls] == ["cancelled"]


async def test_null_recorder_accepts_anything() -> None:
    client = ModelClient(ScriptedProvider([ScriptedProvider.text("x")]), NullRecorder())
    assert (await client.complete([Message.user("x")], purpose="p")).text == "x"


@pytest.mark.parametrize(
    ("base_url", "model"),
    [(None, "m"), ("http://127.0.0.1:1/v1", None), ("", "m"), ("  ", "m"), ("http://x/v1", " ")],
)
def test_factory_returns_none_when_not_configured(base_url: str | None, model: str | None) -> None:
    assert build_model_client(base_url, "key", model, NullRecorder()) is None


async def test_factory_builds_a_working_client(fake_openai: FakeOpenAIServer) -> None:
    recorder = MemoryRecorder()
    client = build_model_client(fake_openai.base_url, fake_openai.api_key, "fake-model", recorder)
    assert client is not None
    try:
        completion = await client.complete([Message.user("hi")], purpose="chat")
    finally:
        await client.aclose()
    assert completion.text == "ok"
    assert recorder.calls[0].model == "fake-model"


async def test_factory_allows_a_keyless_local_server() -> None:
    client = build_model_client("http://127.0.0.1:11434/v1", None, "qwen2.5", NullRecorder())
    assert client is not None
    assert client.model == "qwen2.5"
    await client.aclose()
