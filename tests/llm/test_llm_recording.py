"""Model calls land in the `model_calls` table, on both databases."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from bot.llm.client import ModelClient
from bot.llm.recording import DatabaseRecorder
from bot.llm.types import Message, ModelRequestRejected
from storage.db import Database
from storage.models import ModelCall
from storage.repos import model_calls
from storage.types import utcnow
from tests.fakes.openai_server import FakeOpenAIServer
from tests.llm.conftest import ProviderFactory


async def test_a_429_is_retried_and_the_call_is_recorded_with_its_usage(
    db: Database, fake_openai: FakeOpenAIServer, make_provider: ProviderFactory
) -> None:
    fake_openai.fail_next(429, times=1, headers={"retry-after": "0"})
    fake_openai.reply_text("hello", prompt_tokens=12, completion_tokens=3)
    client = ModelClient(make_provider(), DatabaseRecorder(db))

    completion = await client.complete([Message.user("hi")], purpose="bot_turn")

    assert completion.text == "hello"
    assert len(fake_openai.requests) == 2  # the 429, then the success
    async with db.read() as s:
        rows = (await s.scalars(select(ModelCall))).all()
        usage = await model_calls.usage_since(s, utcnow() - timedelta(hours=1))
    assert [(r.purpose, r.input_tokens, r.output_tokens, r.error) for r in rows] == [
        ("bot_turn", 12, 3, None)
    ]
    assert rows[0].latency_ms >= 0
    assert (usage.calls, usage.input_tokens, usage.output_tokens, usage.errors) == (1, 12, 3, 0)


async def test_a_rejected_call_is_recorded_with_its_error(
    db: Database, fake_openai: FakeOpenAIServer, make_provider: ProviderFactory
) -> None:
    fake_openai.fail_next(400, times=1)
    client = ModelClient(make_provider(), DatabaseRecorder(db))
    try:
        await client.complete([Message.user("hi")], purpose="summary")
    except ModelRequestRejected:
        pass
    else:
        raise AssertionError("a 400 must be rejected")
    async with db.read() as s:
        row = await s.scalar(select(ModelCall))
    assert row is not None and row.purpose == "summary"
    assert row.error is not None and "400" in row.error


async def test_a_call_without_reported_usage_is_recorded_as_estimated(
    db: Database, fake_openai: FakeOpenAIServer, make_provider: ProviderFactory
) -> None:
    body = fake_openai.completion_body({"role": "assistant", "content": "hello there"})
    del body["usage"]  # as local servers answer
    fake_openai.reply_raw(body)
    client = ModelClient(make_provider(), DatabaseRecorder(db))

    await client.complete([Message.user("hi, how are you today?")], purpose="bot_turn")

    async with db.read() as s:
        [row] = (await s.scalars(select(ModelCall))).all()
        usage = await model_calls.usage_since(s, utcnow() - timedelta(hours=1))
    assert row.usage_estimated and row.input_tokens > 0 and row.output_tokens > 0
    assert (usage.calls, usage.estimated) == (1, 1)
