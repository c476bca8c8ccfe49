"""The summary line every benchmark prints for each headline figure, and its parser (used by
`run_all.py`). Not a benchmark (the runner skips files whose name starts with `_`).

The format (benchmarks/README.md has it too): one line on stdout per figure, starting with
`BENCH ` (those six characters, at the very start of the line), then one JSON object on the
same line:

    BENCH {"benchmark": "ingest", "what": "throughput", "ours": 812.4, "baseline": 1203.0,
           "baseline_what": "bare aiohttp + one INSERT", "unit": "events/s",
           "ratio": 0.675, "better": "higher"}

(shown wrapped here; it is one line). Keys:

    benchmark      str    the benchmark's name (its file name without .py)
    what           str    the figure, short: "throughput", "p99 latency at 1000/s"
    ours           number the product's figure
    baseline       number the baseline's figure, measured in the same run
    baseline_what  str    what the baseline is, short
    unit           str    the unit of ours and baseline ("events/s", "ms", "MB")
    ratio          number ours / baseline (null when the baseline is 0)
    better         str    "higher" or "lower": which way the figure (so the ratio) is better

Anything else on stdout is human output and is left alone. A line that starts with `BENCH `
but does not parse, or lacks a key, is an error (the runner fails the benchmark).
A benchmark without Python can print the line by hand; from Python:
`from _summary import emit` (benchmarks/ is the script's directory, so it is on sys.path).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass

PREFIX = "BENCH "
BETTER = ("higher", "lower")


@dataclass(frozen=True)
class Figure:
    benchmark: str
    what: str
    ours: float
    baseline: float
    baseline_what: str
    unit: str
    ratio: float | None
    better: str

    def line(self) -> str:
        return PREFIX + json.dumps(asdict(self), ensure_ascii=False)


def figure(
    benchmark: str,
    what: str,
    ours: float,
    baseline: float,
    *,
    unit: str,
    better: str,
    baseline_what: str,
) -> Figure:
    if better not in BETTER:
        raise ValueError(f"better must be one of {BETTER}, not {better!r}")
    if not (math.isfinite(ours) and math.isfinite(baseline)):
        raise ValueError(f"{benchmark} {what}: {ours} / {baseline} is not a finite figure")
    ratio = _round(ours / baseline) if baseline else None
    return Figure(
        benchmark, what, _round(ours), _round(baseline), baseline_what, unit, ratio, better
    )


def emit(
    benchmark: str,
    what: str,
    ours: float,
    baseline: float,
    *,
    unit: str,
    better: str,
    baseline_what: str,
) -> None:
    """Print one summary line (flushed, so a runner reading the pipe sees it at once)."""
    f = figure(
        benchmark, what, ours, baseline, unit=unit, better=better, baseline_what=baseline_what
    )
    print(f.line(), flush=True)


def parse(line: str) -> Figure | None:
    """The figure on a summary line; None for any other line. Raises ValueError for a line
    that starts with the prefix but is not a valid summary."""
    if not line.startswith(PREFIX):
        return None
    try:
        data = json.loads(line[len(PREFIX) :])
    except json.JSONDecodeError as exc:
        raise ValueError(f"summary line is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError("summary line is not a JSON object")
    try:
        ours, baseline = _number(data["ours"]), _number(data["baseline"])
        ratio = data.get("ratio")
        out = Figure(
            benchmark=str(data["benchmark"]),
            what=str(data["what"]),
            ours=ours,
            baseline=baseline,
            baseline_what=str(data.get("baseline_what") or ""),
            unit=str(data["unit"]),
            ratio=None if ratio is None else _number(ratio),
            better=str(data["better"]),
        )
    except KeyError as exc:
        raise ValueError(f"summary line lacks {exc}") from exc
    if out.better not in BETTER:
        raise ValueError(f"summary line: better must be one of {BETTER}, not {out.better!r}")
    return out


def _round(value: float) -> float:
    """Six significant digits (more than any benchmark here resolves), whole numbers whole."""
    if value == 0:
        return 0.0
    return float(round(value, max(0, 6 - (math.floor(math.log10(abs(value))) + 1))))


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"summary line: {value!r} is not a number")
    return float(value)
