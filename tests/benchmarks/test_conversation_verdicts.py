"""How benchmarks/conversations.py judges issue 19's targets: on the judged shape's rounds,
each round's PostgreSQL run beside the SQLite run of the same round, and on the median round,
so one pair caught in a slow spell of the machine does not decide the verdict."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))  # the benchmarks import their helpers as top-level modules

from _conversation_plan import Plan, Result  # noqa: E402
from _conversation_report import summarize  # noqa: E402
from conversations import parse  # noqa: E402


def _run(database: str, round_: int, acks: float, replies: float) -> Result:
    """A 1500 × 1 instant run that sent for 10 s and answered in 10 s more than that."""
    inputs = int(acks * 10)
    return Result(
        database=database,
        plan=Plan(0.0, 1500, 1, round=round_),
        inputs=inputs,
        sending=10.0,
        answered=inputs / replies,
        replies=inputs,
        ack_times=[0.05],
        reply_delays=[1.0],
        queued=[0.9],
        sent=[0.1],
        turns=inputs,
        steps=inputs,
        other_calls=0,
        peak_calls=96,
        not_2xx=0,
        cpu={},
        maka_cpu=None,
        concurrency=96,
    )


def _verdicts(results: list[Result]) -> tuple[list[str], bool]:
    checks, met = summarize(results, concurrency=96, debounce=0.4)
    return [c for c in checks if c.startswith(("PASS", "MISS"))], met


def test_postgresql_acks_are_judged_on_the_median_round_not_on_one_slow_pair(
    capsys: pytest.CaptureFixture[str],
) -> None:
    results = [
        _run("sqlite", 1, acks=400, replies=350),
        _run("postgresql", 1, acks=300, replies=220),  # 75%: a slow spell
        _run("sqlite", 2, acks=300, replies=270),
        _run("postgresql", 2, acks=285, replies=200),  # 95%
        _run("sqlite", 3, acks=500, replies=440),
        _run("postgresql", 3, acks=470, replies=330),  # 94%
    ]
    verdicts, met = _verdicts(results)
    capsys.readouterr()  # the summary lines
    acks = next(v for v in verdicts if "PostgreSQL acks/s" in v)
    assert acks.startswith("PASS"), acks
    assert "94% of SQLite's 500.0" in acks and "(75%, 95%, 94%)" in acks, acks
    assert met


def test_a_round_is_compared_with_its_own_pair_never_across_rounds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The medians taken apart (PostgreSQL 460, SQLite 500) would say 92%; two rounds of three
    # say 80%.
    results = [
        _run("sqlite", 1, acks=600, replies=500),
        _run("postgresql", 1, acks=480, replies=400),
        _run("sqlite", 2, acks=300, replies=270),
        _run("postgresql", 2, acks=240, replies=200),
        _run("sqlite", 3, acks=500, replies=440),
        _run("postgresql", 3, acks=460, replies=330),
    ]
    verdicts, met = _verdicts(results)
    capsys.readouterr()
    acks = next(v for v in verdicts if "PostgreSQL acks/s" in v)
    assert acks.startswith("MISS") and "(80%, 80%, 92%)" in acks, acks
    assert not met


def test_replies_per_ack_is_judged_on_each_databases_median_round(
    capsys: pytest.CaptureFixture[str],
) -> None:
    results = [
        _run("postgresql", 1, acks=300, replies=120),  # 40%
        _run("postgresql", 2, acks=300, replies=180),  # 60%
        _run("postgresql", 3, acks=300, replies=210),  # 70%
    ]
    verdicts, met = _verdicts(results)
    capsys.readouterr()
    assert verdicts == [
        "PASS  postgresql, instant model, 1500×1: replies/s 180.0 is 60% of acks/s 300.0, "
        "the median of 3 rounds (40%, 60%, 70%) (target >= 50%; at most 96% with turns that "
        "cost nothing)"
    ]
    assert met


def test_the_judged_shape_runs_in_rounds_and_the_others_once() -> None:
    plans = parse(["--rounds", "3", "--latencies", "0,1"]).runs
    judged = [p for p in plans if p.judged]
    assert [(p.shape, p.round) for p in judged] == [("1500×1", 1), ("1500×1", 2), ("1500×1", 3)]
    assert len({p.tag for p in plans}) == len(plans)  # each round's users are new people
    assert [(p.shape, p.round) for p in plans if not p.judged] == [("100×5", 0), ("100×2", 0)]
    assert [p.round for p in parse(["--quick"]).runs if p.judged] == [0]
