"""`OpenAICompatibleProvider` + `ModelClient` against the loopback fake server."""

from __future__ import annotations

import asyncio
import socket
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from bot.llm import (
    MemoryRecorder,
    Message,
    ModelClient,
    ModelRequestRejected,
    ModelUnavailable,
    ToolSpec,
)
from bot.llm.openai_compat import parse_retry_after
from tests.fakes.openai_server import FakeOpenAIServer, openai_error
from tests.llm.conftest import ProviderFactory

HELLO = [Message.system("You are terse."), Message.user("hi")]


async def test_429_is_retried_honouring_retry_after_then_usage_is_recorded(
    fake_openai: FakeOpenAIServer, make_provider: ProviderFactory
) -> None:
    fake_openai.fail_next(
        429,
        headers={"retry-after": "0"},
        body=openai_error("Rate limit reached", "requests", "rate_limit_exceeded"),
    )
    fake_openai.reply_text("hello!", prompt_tokens=12, completion_tokens=3)
    recorder = MemoryRecorder()
    client = ModelClient(make_provider(), recorder)

    completion = await client.complete(HELLO, purpose="chat")

    assert completion.text == "hello!"
    assert completion.finish_reason == "stop"
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (12, 3)
    assert len(fake_openai.requests) == 2
    assert fake_openai.requests[0] == fake_openai.requests[1]
    [record] = recorder.calls
    assert record.purpose == "chat"
    assert record.model == "fake-model"
    assert (record.input_tokens, record.output_tokens) == (12, 3)
    assert record.latency_ms >= 0
    assert record.error is None
    assert record.created_at.tzinfo is not None


async def test_retry_after_overrides_a_long_backoff(
    fake_openai: FakeOpenAIServer, make_provider: ProviderFactory
) -> None:
    # Without the hint the policy would wait ~60 s; the guard only catches a hang.
    fake_openai.fail_next(429, times=2, headers={"retry-after-ms": "0"})
    provider = make_provider(initial_wait=60.0, max_wait=60.0)
    async with asyncio.timeout(20):
        completion = await provider.complete(HELLO)
    assert completion.text == "ok"
    assert len(fake_openai.requests) == 3


async def test_429_asking_for_more_than_max_wait_is_not_hammered(
    fake_openai: FakeOpenAIServer, make_provider: ProviderFactory
) -> None:
    fake_openai.fail_next(429, headers={"retry-after": "120"})
    with pytest.raises(ModelUnavailable, match="429"):
        await make_provider(max_wait=1.0).complete(HELLO)
    assert len(fake_openai.requests) == 1


async def test_out_of_quota_429_is_rejected_not_retried(
    fake_openai: FakeOpenAIServer, make_provider: ProviderFactory
) -> None:
    fake_openai.fail_next(
        429,
        times=3,
        body=openai_error(
            "You exceeded your current quota", "insufficient_quota", "insufficient_quota"
        ),
    )
    with pytest.raises(ModelRequestRejected, match="exceeded your current quota"):
        await make_provider().complete(HELLO)
    assert len(fake_openai.requests) == 1


@pytest.mark.parametrize("status", [500, 502, 503, 408])
async def test_server_errors_are_retried_then_succeed(
    fake_openai: FakeOpenAIServer, make_provider: ProviderFactory, status: int
) -> None:
    fake_openai.fail_next(status)
    fake_openai.reply_text("recovered")
    completion = await make_provider().complete(HELLO)
    assert completion.text == "recovered"
    assert len(fake_openai.requests) == 2


async def test_persistent_5xx_exhausts_retries_and_is_recorded(
    fake_openai: FakeOpenAIServer, make_provider: ProviderFactory
) -> None:
    fake_openai.fail_next(503, times=10)
    recorder = MemoryRecorder()
    client = ModelClient(make_provider(attempts=3), recorder)
    with pytest.raises(ModelUnavailable, match="after 3 attempt"):
        await client.complete(HELLO, purpose="chat")
    assert len(fake_openai.requests) == 3
    [record] = recorder.calls
    assert record.error is not None and "ModelUnavailable" in record.error
    assert (record.input_tokens, record.output_tokens) == (0, 0)


async def test_400_is_not_retried_and_carries_the_server_message(
    fake_openai: FakeOpenAIServer, make_provider: ProviderFactory
) -> None:
    fake_openai.fail_next(
        400,
        times=5,
        body=openai_error("Invalid value for 'temperature': 7.", code="invalid_value"),
    )
    recorder = MemoryRecorder()
    client = ModelClient(make_provider(), recorder)

    with pytest.raises(ModelRequestRejected) as caught:
        await client.complete(HELLO, purpose="summarise")

    assert len(fake_openai.requests) == 1
    assert caught.value.status_code == 400
    assert caught.value.message == "Invalid value for 'temperature': 7."
    assert str(caught.value).startswith("HTTP 400: Invalid value for 'temperature'")
    [record] = recorder.calls
    assert record.purpose == "summarise"
    assert record.error is not None
    assert "ModelRequestRejected" in record.error and "temperature" in record.error
    assert (record.input_tokens, record.output_tokens) == (0, 0)
    assert record.latency_ms >= 0


@pytest.mark.parametrize("status", [401, 403, 404, 409, 422])
async def test_other_4xx_are_not_retried(
    fake_openai: FakeOpenAIServer, make_provider: ProviderFactory, status: int
) -> None:
    fake_openai.fail_next(status, times=5, body=openai_error(f"nope {status}"))
    with pytest.raises(ModelRequestRejected, match=f"nope {status}") as caught:
        await make_provider().complete(HELLO)
    assert caught.value.status_code == status
    assert len(fake_openai.requests) == 1


async def test_non_json_error_body_still_gives_a_message(
    fake_openai: FakeOpenAIServer, make_provider: ProviderFactory
) -> None:
    fake_openai.fail_next(400, body="plain text complaint")
    with pytest.raises(ModelRequestRejected, match="plain text complaint"):
        await make_provider().complete(HELLO)


async def test_wrong_api_key_is_rejected_once(
    fake_openai: FakeOpenAIServer, make_provider: ProviderFactory
) -> None:
    with pytest.raises(ModelRequestRejected, match="Incorrect API key") as caught:
        await make_provider(api_key="wrong").complete(HELLO)
    assert caught.value.status_code == 401
    assert len(fake_openai.requests) == 1
    assert fake_openai.log[0].headers["Authorization"] == "Bearer wrong"


async def test_timeout_is_retried_then_unavailable_and_recorded(
    fake_openai: FakeOpenAIServer, make_provider: ProviderFactory
) -> None:
    fake_openai.delay_next(30, times=3)
    recorder = MemoryRecorder()
    client = ModelClient(make_provider(timeout=0.2, attempts=3), recorder)

    with pytest.raises(ModelUnavailable, match="timed out"):
        await client.complete(HELLO, purpose="chat")

    assert len(fake_openai.requests) == 3
    [record] = recorder.calls
    assert record.error is not None and "timed out" in record.error
    assert record.output_tokens == 0


async def test_timeout_then_success(
    fake_openai: FakeOpenAIServer, make_provider: ProviderFactory
) -> None:
    fake_openai.delay_next(30)
    fake_openai.reply_text("finally")
    completion = await make_provider(timeout=0.2).complete(HELLO)
    assert completion.text == "finally"
    assert len(fake_openai.requests) == 2


async def test_connection_refused_is_retried_then_unavailable(
    make_provider: ProviderFactory,
) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = make_provider(base_url=f"http://127.0.0.1:{port}/v1", attempts=2)
    with pytest.raises(ModelUnavailable, match=r"after 2 attempt.*connection error"):
        await provider.complete(HELLO)


async def test_a_model_endpoint_behind_the_environments_proxy_is_reached_through_it(
    fake_openai: FakeOpenAIServer, make_provider: ProviderFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HTTP_PROXY names the fake server, the endpoint a host that does not resolve: only a
    request sent through the proxy (absolute-form, as proxies get them) can be answered."""
    for name in ("NO_PROXY", "no_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", fake_openai.base_url.removesuffix("/v1"))
    fake_openai.reply_text("via the proxy")
    provider = make_provider(base_url="http://model.invalid/v1", attempts=1)
    assert (await provider.complete(HELLO)).text == "via the proxy"
    monkeypatch.setenv("NO_PROXY", "model.invalid")  # and a host it names is not proxied
    with pytest.raises(ModelUnavailable, match="connection error"):
        await make_provider(base_url="http://model.invalid/v1", attempts=1).complete(HELLO)


async def test_request_body_has_openai_shape_and_options(
    fake_openai: FakeOpenAIServer, make_provider: ProviderFactory
) -> None:
    await make_provider().complete(HELLO, max_tokens=50, temperature=0.2)
    [body] = fake_openai.requests
    assert body["model"] == "fake-model"
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "hi"},
    ]
    assert body["max_tokens"] == 50
    assert body["temperature"] == 0.2
    assert "tools" not in body
    assert fake_openai.log[0].headers["Authorization"] == "Bearer test-key"


async def test_max_completion_tokens_can_be_selected(
    fake_openai: FakeOpenAIServer, make_provider: ProviderFactory
) -> None:
    await make_provider(max_tokens_param="max_completion_tokens").complete(HELLO, max_tokens=9)
    [body] = fake_openai.requests
    assert body["max_completion_tokens"] == 9
    assert "max_tokens" not in body


WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)


async def test_tool_calls_round_trip(
    fake_openai: FakeOpenAIServer, make_provider: ProviderFactory
) -> None:
    provider = make_provider()
    fake_openai.reply_tool_calls([("get_weather", {"city": "杭州"})], text="Let me check.")
    fake_openai.reply_text("Sunny in 杭州.")
    history = [Message.user("weather in 杭州?")]

    first = await provider.complete(history, [WEATHER])

    assert first.finish_reason == "tool_calls"
    assert first.text == "Let me check."
    [call] = first.tool_calls
    assert call.name == "get_weather"
    assert call.arguments == {"city": "杭州"}
    assert call.parse_error is None
    assert fake_openai.requests[0]["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": WEATHER.parameters,
            },
        }
    ]

    history += [first.as_message(), Message.tool(call.id, "sunny, 25°C")]
    second = await provider.complete(history, [WEATHER])

    assert second.text == "Sunny in 杭州."
    sent = fake_openai.requests[1]["messages"]
    assert sent[1] == {
        "role": "assistant",
        "content": "Let me check.",
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": "get_weather", "arguments": call.raw_arguments},
            }
        ],
    }
    assert sent[2] == {"role": "tool", "tool_call_id": call.id, "content": "sunny, 25°C"}


async def test_invalid_tool_arguments_do_not_crash(
    fake_openai: FakeOpenAIServer, make_provider: ProviderFactory
) -> None:
    for _ in range(2):  # asked again once, the model slips again
        fake_openai.reply_tool_calls(
            [("get_weather", '{"city": "Par'), ("get_weather", "[1, 2]"), ("get_weather", "")]
        )
    completion = await make_provider().complete([Message.user("weather?")], [WEATHER])
    assert len(fake_openai.requests) == 2
    note = fake_openai.requests[1]["messages"][-1]
    assert note["role"] == "user" and "not valid JSON" in note["content"]
    broken, not_object, empty = completion.tool_calls
    assert broken.arguments == {} and broken.raw_arguments == '{"city": "Par'
    assert broken.parse_error is not None and not broken.ok
    assert not_object.arguments == {} and not_object.parse_error is not None
    assert empty.arguments == {} and empty.parse_error is None

    # The malformed call can still be answered and sent back verbatim.
    history = [
        Message.user("weather?"),
        completion.as_message(),
        *(Message.tool(c.id, "error: bad arguments") for c in completion.tool_calls),
    ]
    await make_provider().complete(history, [WEATHER])
    resent = fake_openai.requests[2]["messages"][1]["tool_calls"][0]["function"]["arguments"]
    assert resent == '{"city": "Par'


async def test_missing_usage_and_odd_shapes_are_tolerated(
    fake_openai: FakeOpenAIServer, make_provider: ProviderFactory
) -> None:
    fake_openai.reply_raw(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "served-model",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        # no "type": some compatible servers omit it
                        "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{}"}}],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
        }
    )
    completion = await make_provider().complete(HELLO)
    # No usage reported: the one tokenizer's estimate, marked as one.
    assert completion.usage.estimated
    assert completion.usage.input_tokens > 0 and completion.usage.output_tokens > 0
    assert completion.model == "served-model"
    assert completion.text is None
    assert [(c.id, c.name, c.arguments) for c in completion.tool_calls] == [("c1", "f", {})]


async def test_no_choices_is_unavailable_not_a_crash(
    fake_openai: FakeOpenAIServer, make_provider: ProviderFactory
) -> None:
    fake_openai.reply_raw({"id": "x", "object": "chat.completion", "model": "m", "choices": []})
    with pytest.raises(ModelUnavailable, match="no choices"):
        await make_provider().complete(HELLO)
    assert len(fake_openai.requests) == 1


async def test_check_lists_models(
    fake_openai: FakeOpenAIServer, make_provider: ProviderFactory
) -> None:
    description = await make_provider().check()
    assert "1 model(s)" in description and "'fake-model' listed" in description
    assert "\n" not in description
    assert fake_openai.requests == []


async def test_check_falls_back_to_a_tiny_completion_without_models_endpoint(
    fake_openai: FakeOpenAIServer, make_provider: ProviderFactory
) -> None:
    fake_openai.models_endpoint = False
    description = await make_provider().check()
    assert "no /models endpoint" in description
    [body] = fake_openai.requests
    assert body["max_tokens"] == 1


async def test_check_reports_a_bad_key(make_provider: ProviderFactory) -> None:
    with pytest.raises(ModelRequestRejected, match="Incorrect API key"):
        await make_provider(api_key="wrong").check()


def test_parse_retry_after() -> None:
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after": "0.5"}) == 0.5
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
    assert parse_retry_after(None) is None
    past = format_datetime(datetime.now(UTC) - timedelta(minutes=1), usegmt=True)
    assert parse_retry_after({"retry-after": past}) == 0.0
    future = format_datetime(datetime.now(UTC) + timedelta(hours=1), usegmt=True)
    hint = parse_retry_after({"retry-after": future})
    assert hint is not None and hint > 60


async def test_more_requests_than_aiohttp_allows_by_default_are_in_flight_at_once(
    fake_openai: FakeOpenAIServer, make_provider: ProviderFactory
) -> None:
    # The workers' pools (MAKA_BOT_CONCURRENCY up to 256) bound the calls; a connection
    # limit of the client's own (aiohttp's default: 100) would queue the rest unseen.
    many = 101
    fake_openai.hold_until_together(many)
    client = ModelClient(make_provider(timeout=30.0), MemoryRecorder())
    try:
        async with asyncio.timeout(20):  # held forever if fewer than `many` get through
            done = await asyncio.gather(
                *(client.complete(HELLO, purpose="chat") for _ in range(many))
            )
    except TimeoutError:
        pytest.fail(f"after 20 s, fewer than {many} model requests were in flight at once")
    assert [c.text for c in done] == ["ok"] * many
