"""The fallback model (MAKA_MODEL_FALLBACK_*): asked once with the same request when the
primary stays unavailable after its retries (5xx, a refused connection) or has no such model
(404), recorded as a fallback call; never for a request the server refused (400); its own
failure is the call's one failure."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator

import pytest

from bot.llm import (
    MemoryRecorder,
    Message,
    ModelClient,
    ModelRequestRejected,
    ModelUnavailable,
)
from bot.llm.openai_compat import OpenAICompatibleProvider
from tests.fakes.openai_server import FakeOpenAIServer, openai_error
from tests.llm.conftest import FAST


@pytest.fixture
async def backup() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer(api_key="key-backup", models=["backup-model"]) as server:
        yield server


def _client(primary_url: str, backup: FakeOpenAIServer, recorder: MemoryRecorder) -> ModelClient:
    primary = OpenAICompatibleProvider(primary_url, "test-key", "primary-model", **FAST)
    spare = OpenAICompatibleProvider(backup.base_url, backup.api_key, "backup-model", **FAST)
    return ModelClient(primary, recorder, fallback=spare)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again: connections are refused


PROMPT = [Message.system("be brief"), Message.user("what is on today?")]


async def test_the_fallback_answers_when_the_primary_keeps_answering_503(
    fake_openai: FakeOpenAIServer, backup: FakeOpenAIServer
) -> None:
    fake_openai.fail_next(503, times=FAST["attempts"])
    backup.reply_text("two meetings", prompt_tokens=30, completion_tokens=4)
    recorder = MemoryRecorder()
    client = _client(fake_openai.base_url, backup, recorder)
    try:
        completion = await client.complete(PROMPT, purpose="bot_turn", conversation_id=7)
    finally:
        await client.aclose()
    assert completion.text == "two meetings"
    assert len(fake_openai.requests) == FAST["attempts"]  # its retries first
    [asked] = backup.requests  # the same request, once, naming the fallback's model
    assert asked["model"] == "backup-model"
    assert asked["messages"] == fake_openai.requests[0]["messages"]
    failed, answered = recorder.calls
    assert (failed.model, failed.fallback, failed.error is not None) == (
        "primary-model", False, True
    )  # fmt: skip
    assert (answered.model, answered.fallback, answered.error) == ("backup-model", True, None)
    assert (answered.input_tokens, answered.conversation_id) == (30, 7)


async def test_the_fallback_answers_when_the_primary_refuses_connections(
    backup: FakeOpenAIServer,
) -> None:
    recorder = MemoryRecorder()
    client = _client(f"http://127.0.0.1:{_closed_port()}/v1", backup, recorder)
    try:
        completion = await client.complete(PROMPT, purpose="session_summary")
    finally:
        await client.aclose()
    assert completion.text == "ok" and len(backup.requests) == 1
    assert [c.fallback for c in recorder.calls] == [False, True]
    assert "connection error" in (recorder.calls[0].error or "")


async def test_a_model_the_primary_does_not_have_goes_to_the_fallback(
    fake_openai: FakeOpenAIServer, backup: FakeOpenAIServer
) -> None:
    body = openai_error("The model `primary-model` does not exist", code="model_not_found")
    fake_openai.fail_next(404, body=body)
    recorder = MemoryRecorder()
    client = _client(fake_openai.base_url, backup, recorder)
    try:
        await client.complete(PROMPT, purpose="index_turn")
    finally:
        await client.aclose()
    assert len(fake_openai.requests) == 1 and len(backup.requests) == 1
    assert recorder.calls[-1].fallback


async def test_a_request_the_primary_rejects_is_not_sent_to_the_fallback(
    fake_openai: FakeOpenAIServer, backup: FakeOpenAIServer
) -> None:
    fake_openai.fail_next(400, body=openai_error("messages too long"))
    recorder = MemoryRecorder()
    client = _client(fake_openai.base_url, backup, recorder)
    try:
        with pytest.raises(ModelRequestRejected, match="messages too long"):
            await client.complete(PROMPT, purpose="bot_turn")
    finally:
        await client.aclose()
    assert backup.requests == []
    assert [c.fallback for c in recorder.calls] == [False]


async def test_a_failing_fallback_is_the_calls_one_failure(
    fake_openai: FakeOpenAIServer, backup: FakeOpenAIServer
) -> None:
    fake_openai.fail_next(503, times=FAST["attempts"])
    backup.fail_next(502, times=FAST["attempts"])
    recorder = MemoryRecorder()
    client = _client(fake_openai.base_url, backup, recorder)
    try:
        with pytest.raises(ModelUnavailable) as caught:
            await client.complete(PROMPT, purpose="bot_turn")
    finally:
        await client.aclose()
    assert "'backup-model' unavailable" in str(caught.value)
    assert len(str(caught.value).splitlines()) == 1
    assert [(c.fallback, c.error is not None) for c in recorder.calls] == [
        (False, True), (True, True)
    ]  # fmt: skip


async def test_without_a_fallback_the_primarys_failure_is_raised_as_before(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.fail_next(503, times=FAST["attempts"])
    recorder = MemoryRecorder()
    primary = OpenAICompatibleProvider(fake_openai.base_url, "test-key", "fake-model", **FAST)
    client = ModelClient(primary, recorder)
    try:
        with pytest.raises(ModelUnavailable, match="'fake-model' unavailable"):
            await client.complete(PROMPT, purpose="bot_turn")
    finally:
        await client.aclose()
    assert [c.fallback for c in recorder.calls] == [False]
