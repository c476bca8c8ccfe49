"""Numbers from people and models (bot/parsing.py): ASCII digits only, always bounded, and a
bad value is a ValueError carrying the line to answer with, never another exception."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.parsing import (
    MAX_ID,
    MAX_INT32,
    NotANumber,
    OutOfRange,
    parse_duration,
    parse_id,
    parse_whole,
    spoken,
)

NOT_NUMBERS = [
    "",
    " ",
    "²",  # str.isdigit() says yes; int() says no
    "٣",  # Arabic-Indic three: int() reads 3
    "３",  # fullwidth three: int() reads 3
    "1_000",  # int() reads 1000
    "-1",
    "+1",
    "1.0",
    "1e3",
    "0x10",
    "1 2",
    "nan",
    "inf",
    "12a",
]


@pytest.mark.parametrize("text", NOT_NUMBERS)
def test_what_is_not_ascii_digits_is_not_a_number(text: str) -> None:
    with pytest.raises(NotANumber, match="is not a whole number"):
        parse_whole(text, most=10**6)
    with pytest.raises(NotANumber):
        parse_id(text)


def test_a_whole_number_is_read_within_its_bounds() -> None:
    assert parse_whole(" 42 ", most=100) == 42
    assert parse_whole("007", most=7) == 7
    assert parse_whole("0", most=1) == 0
    with pytest.raises(OutOfRange, match=r"^101: from 0 to 100$"):
        parse_whole("101", most=100)
    with pytest.raises(OutOfRange, match="from 5 to 100"):
        parse_whole("4", least=5, most=100)
    with pytest.raises(OutOfRange):
        parse_whole("9" * 5000, most=100)  # int() itself refuses this many digits


def test_an_id_no_row_can_have_is_absent_not_an_error() -> None:
    assert parse_id("12") == 12
    assert parse_id("#12") == 12
    assert parse_id(str(MAX_ID)) == MAX_ID
    assert parse_id(str(MAX_ID + 1)) is None
    assert parse_id("99999999999999999999999") is None
    assert parse_id("0") is None
    assert parse_id(str(MAX_INT32 + 1), most=MAX_INT32) is None
    with pytest.raises(NotANumber, match=r"^'x' is not a task number$"):
        parse_id("x", what="a task number")
    with pytest.raises(NotANumber, match=r"^'#' is not a number$"):
        parse_id(" # ")


@given(st.text(max_size=40))
def test_any_text_is_an_id_in_range_none_or_not_a_number(text: str) -> None:
    try:
        found = parse_id(text)
    except NotANumber:
        return
    assert found is None or 1 <= found <= MAX_ID
    assert text.strip().removeprefix("#").isascii()


@given(st.integers())
def test_any_integer_written_out_is_read_back_or_refused_as_out_of_range(n: int) -> None:
    if 0 <= n <= MAX_INT32:
        assert parse_whole(str(n), most=MAX_INT32) == n
    elif n > MAX_INT32:
        with pytest.raises(OutOfRange):
            parse_whole(str(n), most=MAX_INT32)
    else:
        with pytest.raises(NotANumber):
            parse_whole(str(n), most=MAX_INT32)


@pytest.mark.parametrize(
    ("text", "seconds"), [("30m", 1800), ("2h", 7200), ("1D", 86_400), (" 90 ", 90), ("5 min", 300)]
)
def test_durations_are_read_as_people_write_them(text: str, seconds: int) -> None:
    assert parse_duration(text, most=7 * 86_400) == seconds


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("99999999999d", "99999999999d: at most 7 days"),
        ("8d", "8d: at most 7 days"),
        ("9" * 400 + "s", "at most 7 days"),
        ("1m", "1m: at least 5 minutes"),
        ("٣٠m", "٣٠m: write a duration like 30m, 2h or 1d"),
        ("-5m", "-5m: write a duration like 30m, 2h or 1d"),
        ("1_0m", "1_0m: write a duration like 30m, 2h or 1d"),
        ("soon", "soon: write a duration like 30m, 2h or 1d"),
        ("30ſ", "30ſ: write a duration like 30m, 2h or 1d"),  # long s: 's' when case-folded
    ],
)
def test_a_duration_out_of_bounds_or_not_written_as_one_says_which(text: str, error: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_duration(text, least=300, most=7 * 86_400)
    assert str(caught.value).endswith(error)


@given(st.text(max_size=30))
def test_any_text_is_a_duration_in_range_or_a_value_error(text: str) -> None:
    try:
        seconds = parse_duration(text, least=300, most=7 * 86_400)
    except ValueError:
        return
    assert 300 <= seconds <= 7 * 86_400


@given(st.from_regex(r"[0-9]{1,30} ?(s|m|min|h|d|S|M|MIN|H|D)?", fullmatch=True))
def test_any_duration_written_in_digits_and_a_unit_is_read_or_refused_as_out_of_range(
    text: str,
) -> None:
    try:
        seconds = parse_duration(text, least=300, most=7 * 86_400)
    except OutOfRange:
        return
    assert 300 <= seconds <= 7 * 86_400


def test_bounds_are_said_in_the_largest_whole_unit() -> None:
    assert [spoken(s) for s in (1, 90, 300, 3600, 86_400, 7 * 86_400)] == [
        "1 second", "90 seconds", "5 minutes", "1 hour", "1 day", "7 days",
    ]  # fmt: skip
