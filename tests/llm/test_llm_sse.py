"""Streamed chunks put back together, errors sent inside a stream, Azure's URLs."""

from __future__ import annotations

import json

import pytest

from bot.llm.openai_compat import http_error
from bot.llm.openai_wire import azure_url, completion_from_openai, is_azure
from bot.llm.sse import StreamAssembler, StreamError
from bot.llm.types import ModelRefused


def data(chunk: object) -> str:
    return "data: " + json.dumps(chunk)


def delta(**fields: object) -> dict[str, object]:
    return {"model": "m", "choices": [{"index": 0, "delta": fields, "finish_reason": None}]}


def test_fragments_of_text_reasoning_and_two_tool_calls_are_assembled() -> None:
    stream = StreamAssembler()
    lines = [
        ": keep-alive",
        data(delta(role="assistant", content="")),
        data(delta(reasoning_content="let me ")),
        data(delta(reasoning_content="see")),
        data(delta(tool_calls=[{"index": 0, "id": "a", "function": {"name": "f"}}])),
        data(delta(tool_calls=[{"index": 1, "id": "b", "function": {"name": "g"}}])),
        data(delta(tool_calls=[{"index": 0, "function": {"arguments": '{"x": '}}])),
        data(delta(tool_calls=[{"index": 1, "function": {"arguments": "{}"}}])),
        data(delta(tool_calls=[{"index": 0, "function": {"arguments": "1}"}}])),
        data({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        data({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}}),
        "data: [DONE]",
    ]
    for line in lines:
        stream.feed_line(line)
    completion = completion_from_openai(stream.body(), "m")
    assert stream.done
    assert [(c.id, c.name, c.arguments) for c in completion.tool_calls] == [
        ("a", "f", {"x": 1}),
        ("b", "g", {}),
    ]
    assert completion.reasoning == "let me see" and completion.text is None
    assert completion.finish_reason == "tool_calls"
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (7, 3)


def test_an_error_inside_a_stream_is_read_like_an_error_answer() -> None:
    stream = StreamAssembler()
    stream.feed_line(data(delta(content="Once upon")))
    body = {"code": "data_inspection_failed", "message": "Output data may contain inappropriate"}
    with pytest.raises(StreamError) as caught:
        stream.feed_line(data({"error": body}))
    error = http_error(400, json.dumps({"error": caught.value.body}).encode(), {})
    assert isinstance(error, ModelRefused)


@pytest.mark.parametrize(
    ("base_url", "expected"),
    [
        ("https://acme.openai.azure.com", "https://acme.openai.azure.com/openai/deployments/gpt4o"),
        (
            "https://acme.openai.azure.com/openai/deployments/other/",
            "https://acme.openai.azure.com/openai/deployments/other",
        ),
    ],
)
def test_azure_is_called_at_the_deployment(base_url: str, expected: str) -> None:
    assert is_azure(base_url)
    assert azure_url(base_url, "gpt4o") == expected


def test_other_endpoints_are_not_azure() -> None:
    assert not is_azure("https://api.deepseek.com/v1")
    assert not is_azure("https://dashscope.aliyuncs.com/compatible-mode/v1")
