"""Long replies are split below Feishu's limits without losing a character."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from bot.channels.feishu.content import MAX_TEXT_BYTES, render, split_text


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
