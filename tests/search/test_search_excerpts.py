from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from storage.search.excerpts import ELLIPSIS, excerpts


def test_excerpt_centres_on_a_match_far_into_the_text() -> None:
    text = "无关内容。" * 100 + "出现 ERR_CONN_RESET 错误" + "后续内容。" * 100
    (first,) = excerpts(text, ["err_conn_reset"], max_count=1)
    assert "ERR_CONN_RESET" in first
    assert first.startswith(ELLIPSIS) and first.endswith(ELLIPSIS)
    assert len(first) <= 200


def test_excerpt_prefers_the_window_holding_more_distinct_tokens() -> None:
    text = "deploy " + "x " * 300 + "deploy failed with timeout " + "y " * 300
    (first,) = excerpts(text, ["deploy", "failed", "timeout"], max_count=1)
    assert "deploy failed with timeout" in first


def test_several_excerpts_do_not_overlap() -> None:
    text = ("alpha " + "filler " * 60) * 3
    found = excerpts(text, ["alpha"], max_len=60, max_count=3)
    assert len(found) == 3
    assert all(e.count("alpha") == 1 for e in found)


def test_short_text_is_returned_whole_without_ellipsis() -> None:
    assert excerpts("重连成功", ["重连"]) == ["重连成功"]


def test_text_without_a_match_gives_its_beginning() -> None:
    text = "开头的内容" * 100
    (first,) = excerpts(text, ["不存在"])
    assert first.startswith("开头的内容") and len(first) <= 200


def test_match_is_found_case_insensitively_and_whitespace_collapsed() -> None:
    (first,) = excerpts("line one\n\n   getUserName   failed", ["getusername"])
    assert first == "line one getUserName failed"


def test_empty_text_has_no_excerpt() -> None:
    assert excerpts("", ["x"]) == []


@given(
    text=st.text(min_size=0, max_size=600),
    tokens=st.lists(st.text(min_size=1, max_size=8), max_size=4),
    max_len=st.integers(min_value=1, max_value=250),
)
def test_excerpts_never_exceed_max_len(text: str, tokens: list[str], max_len: int) -> None:
    found = excerpts(text, tokens, max_len=max_len, max_count=3)
    assert len(found) <= 3
    assert all(len(e) <= max_len for e in found)
