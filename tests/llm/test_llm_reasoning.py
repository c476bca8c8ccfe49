"""Reasoning text kept apart from the answer, and the tool-argument slips that are repaired."""

from __future__ import annotations

import pytest

from bot.llm.reasoning import split_reasoning
from bot.llm.tool_json import repair_json_object
from bot.llm.types import parse_arguments


@pytest.mark.parametrize(
    ("content", "answer", "reasoning"),
    [
        ("<think>\nweighing it\n</think>\n\nHello.", "Hello.", "weighing it"),
        ("<think>cut while still thinking", None, "cut while still thinking"),
        ("opened by the template</think>Hello.", "Hello.", "opened by the template"),
        ("<think>a</think>Hi <think>b</think>there.", "Hi there.", "a\n\nb"),
        ("Nothing to hide.", "Nothing to hide.", None),
        ("I think so.", "I think so.", None),
    ],
)
def test_reasoning_is_split_from_the_answer(
    content: str, answer: str | None, reasoning: str | None
) -> None:
    assert split_reasoning(content) == (answer, reasoning)


@pytest.mark.parametrize(
    "raw",
    [
        '```json\n{"city": "Paris"}\n```',
        '{"city": "Paris"}\nLet me know if you need more.',
        "{'city': 'Paris'}",
        '{"city": "Paris",}',
        'Sure: {"city": "Paris"}',
    ],
)
def test_common_slips_in_tool_arguments_are_repaired(raw: str) -> None:
    assert parse_arguments(raw) == ({"city": "Paris"}, None)


@pytest.mark.parametrize("raw", ['{"city": "Par', "city=Paris", "[1, 2]"])
def test_what_cannot_be_repaired_stays_an_error(raw: str) -> None:
    arguments, error = parse_arguments(raw)
    assert arguments == {} and error is not None


def test_a_quote_inside_single_quotes_survives_the_repair() -> None:
    assert repair_json_object("{'said': 'she said \"hi\"'}") == {"said": 'she said "hi"'}
