"""Long replies are split below Feishu's limits without losing a character."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from bot.channels.feishu.card_json import markdown_card
from bot.channels.feishu.content import MAX_TEXT_BYTES, render, split_text
from bot.channels.feishu.markdown_parts import body_bytes, split_markdown


@given(st.text(min_size=1, max_size=5000), st.integers(min_value=50, max_value=2000))
def test_split_text_keeps_every_part_within_the_limit(text: str, limit: int) -> None:
    parts = split_text(text, limit)
    assert all(len(p.encode()) <= limit for p in parts)
    # nothing but the whitespace at a cut is lost
    assert "".join("".join(p.split()) for p in parts) == "".join(text.split())


def test_a_long_chinese_reply_becomes_several_text_messages() -> None:
    text = "\n\n".join(f"第{i}段：重连风暴的分析与处理。" * 40 for i in range(60))
    messages = render("text", {"text": text})
    assert len(messages) > 1
    for msg_type, content in messages:
        assert msg_type == "text"
        assert len(json.loads(content)["text"].encode()) <= MAX_TEXT_BYTES


def test_post_keeps_its_title_and_paragraphs() -> None:
    [(msg_type, content)] = render("post", {"title": "Plan", "paragraphs": ["one", "two"]})
    assert msg_type == "post"
    body = json.loads(content)["zh_cn"]
    assert body["title"] == "Plan"
    assert [p[0]["text"] for p in body["content"]] == ["one", "two"]


def _cards(text: str) -> list[dict[str, Any]]:
    messages = render("markdown", {"text": text})
    assert all(msg_type == "interactive" for msg_type, _ in messages)
    return [json.loads(content) for _, content in messages]


def _markdown_of(card: dict[str, Any]) -> str:
    assert card["schema"] == "2.0"
    [element] = card["body"]["elements"]
    assert element["tag"] == "markdown"
    return str(element["content"])


def test_a_markdown_table_is_one_card_json_2_markdown_element() -> None:
    text = "Results:\n\n| name | score |\n|---|---|\n| a | 1 |\n| b | 2 |"
    [card] = _cards(text)
    assert _markdown_of(card) == text
    assert markdown_card(text, "Scores")["header"]["title"]["content"] == "Scores"


def _within_limit(text: str) -> list[str]:
    """The parts' markdown, each card's request body checked against Feishu's 30 KB."""
    parts = []
    for _, content in render("markdown", {"text": text}):
        body = {
            "receive_id": "oc_" + "x" * 32,
            "msg_type": "interactive",
            "content": content,
            "uuid": "b" * 50,
        }
        assert len(json.dumps(body).encode()) <= 30 * 1024  # as aiohttp writes it
        parts.append(_markdown_of(json.loads(content)))
    return parts


def test_a_long_code_block_is_closed_and_reopened_across_cards() -> None:
    code = "\n".join(f'    print("第{i}行", {i})' for i in range(3000))
    parts = _within_limit(f"Here:\n\n```python\n{code}\n```\n\nDone.")
    assert len(parts) > 1
    for part in parts:
        assert part.count("```") % 2 == 0, "every part's fences are balanced"
    for part in parts[1:]:
        assert part.startswith("```python\n")
    body = "\n".join(
        line for part in parts for line in part.split("\n") if not line.startswith("```")
    )
    assert body == f"Here:\n\n{code}\n\nDone."


def test_a_long_table_is_cut_between_rows_with_its_header_again() -> None:
    rows = "\n".join(f'| {i} | 条目{i} "quoted" |' for i in range(2500))
    header = "| n | item |\n|---|---|"
    parts = _within_limit(f"{header}\n{rows}")
    assert len(parts) > 1
    assert all(part.startswith(header + "\n") for part in parts)
    got = [line for part in parts for line in part.split("\n")[2:]]
    assert got == rows.split("\n")


@given(st.text(alphabet=st.sampled_from(list('ab `|-\n"\\é中')), max_size=3000))
def test_markdown_parts_fit_and_lose_nothing_but_breaks(text: str) -> None:
    parts = split_markdown(text, 600)
    assert all(body_bytes(part) <= 600 for part in parts)
    squeezed = "".join("".join(p.split()) for p in parts)
    for extra in ("`", "|", "-"):  # fences and table headers repeated at cuts
        squeezed = squeezed.replace(extra, "")
    expected = "".join(text.split())
    for extra in ("`", "|", "-"):
        expected = expected.replace(extra, "")
    assert squeezed == expected
