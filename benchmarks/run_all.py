"""Every benchmark in turn, then one table: `make bench` runs `.venv/bin/python
benchmarks/run_all.py` (`make bench BENCH_ARGS=--quick` for a smoke run).

    run_all.py [--quick] [--timeout SECONDS] [NAME ...]

Runs each `benchmarks/*.py` (all of them, or the NAMEs given, e.g. `search sync`; files whose
name starts with `_` are shared helpers, not benchmarks) as a subprocess of this Python, from
the repository root, with its default, full-size settings. `--quick` is passed on to those
that take it (their source mentions `--quick`); the others run as they are. Their output is
shown as it comes; their summary lines are collected and, at the end, printed as one markdown
table: benchmark | figure | ours | baseline | ratio.

The summary line (written down in benchmarks/_summary.py and benchmarks/README.md): one line
on stdout per headline figure, `BENCH ` then one JSON object with benchmark, what, ours,
baseline, baseline_what, unit, ratio (ours / baseline) and better ("higher" or "lower").

Exit status: 0 when every benchmark exited 0; 1 when one did not, timed out, or printed a
summary line that does not parse (the table still shows what was collected); 130 when
interrupted. A benchmark that prints no summary line is shown as such, not failed. With
`--timeout`, a benchmark still running after that many seconds is interrupted (SIGINT to its
process group, so its own servers and temp databases are cleaned up; SIGKILL 15 s later).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from _summary import Figure, parse

SELF = Path(__file__).resolve()
HERE = SELF.parent
ROOT = HERE.parent
GRACE = 15.0  # seconds between SIGINT and SIGKILL


@dataclass
class Run:
    name: str
    figures: list[Figure] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    returncode: int | None = None
    seconds: float = 0.0
    timed_out: bool = False
    interrupted: bool = False

    @property
    def ok(self) -> bool:
        return (
            self.returncode == 0 and not self.errors and not self.timed_out and not self.interrupted
        )

    def status(self) -> str:
        if self.timed_out:
            return "TIMED OUT"
        if self.interrupted or self.returncode is None:
            return "INTERRUPTED"
        if self.returncode != 0:
            return f"FAILED (exit {self.returncode})"
        return "FAILED (bad summary line)" if self.errors else "ok"


def benchmarks() -> list[Path]:
    return sorted(p for p in HERE.glob("*.py") if not p.name.startswith("_") and p != SELF)


def takes_quick(path: Path) -> bool:
    return "--quick" in path.read_text(encoding="utf-8")


def stop(proc: subprocess.Popen[str]) -> None:
    """Interrupt the benchmark's process group (it was started in its own session), then
    kill it if it is still there after GRACE seconds."""
    for sig in (signal.SIGINT, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=GRACE)
            return
        except subprocess.TimeoutExpired:
            continue


def run_one(path: Path, quick: bool, timeout: float | None) -> Run:
    run = Run(path.stem)
    command = [sys.executable, str(path)] + (["--quick"] if quick and takes_quick(path) else [])
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    print(f"\n== {shown} {' '.join(command[2:])}".rstrip(), flush=True)
    started = time.monotonic()
    proc = subprocess.Popen(
        command,
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
        start_new_session=True,  # one process group to stop, servers included
    )
    timer = None
    if timeout:

        def expire() -> None:
            run.timed_out = True
            stop(proc)

        timer = threading.Timer(timeout, expire)
        timer.daemon = True
        timer.start()
    assert proc.stdout is not None

    def take(line: str) -> None:
        sys.stdout.write(line)
        sys.stdout.flush()
        try:
            found = parse(line.rstrip("\n"))
        except ValueError as exc:
            run.errors.append(str(exc))
            return
        if found is not None:
            run.figures.append(found)

    try:
        for line in proc.stdout:
            take(line)
        run.returncode = proc.wait()
    except KeyboardInterrupt:
        run.interrupted = True
        stop(proc)
        for line in proc.stdout:  # what it said while stopping
            take(line)
        run.returncode = proc.poll()
    finally:
        if timer is not None:
            timer.cancel()
        run.seconds = time.monotonic() - started
    return run


def number(value: float) -> str:
    size = abs(value)
    if value == int(value) and size < 1e15:
        return f"{int(value):,}"
    if size >= 1000:
        return f"{value:,.0f}"
    if size >= 100:
        return f"{value:.0f}"
    if size >= 10:
        return f"{value:.1f}"
    if size >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def table(runs: list[Run]) -> str:
    lines = ["| benchmark | figure | ours | baseline | ratio |", "|---|---|---|---|---|"]
    for run in runs:
        for f in run.figures:
            ratio = "-" if f.ratio is None else f"{f.ratio:.2f}x"
            baseline = number(f.baseline)
            if f.baseline_what:
                baseline += f" ({f.baseline_what})"
            lines.append(
                f"| {f.benchmark} | {f.what} ({f.unit}, {f.better} is better) | "
                f"{number(f.ours)} | {baseline} | {ratio} |"
            )
        if not run.figures:
            lines.append(f"| {run.name} | no summary lines ({run.status()}) | - | - | - |")
    return "\n".join(lines)


def report(runs: list[Run], planned: list[Path]) -> None:
    print("\n== summary", flush=True)
    for run in runs:
        figures = f"{len(run.figures)} figures" if run.figures else "no summary lines"
        print(f"{run.name:<12} {run.status():<26} {run.seconds:>7.1f} s  {figures}")
        for error in run.errors[:3]:
            print(f"{'':<12} {error}")
    for path in planned[len(runs) :]:
        print(f"{path.stem:<12} not run")
    print()
    print(table(runs))
    print("\nratio = ours / baseline, both measured in this run; each figure says which is better")
    failed = [r.name for r in runs if not r.ok] + [p.stem for p in planned[len(runs) :]]
    print(f"\nnot ok: {', '.join(failed)}" if failed else f"\nall {len(runs)} benchmarks ok")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    parser.add_argument("--quick", action="store_true", help="pass --quick where taken")
    parser.add_argument("--timeout", type=float, help="seconds per benchmark (no limit)")
    args = parser.parse_args()
    found = {p.stem: p for p in benchmarks()}
    unknown = [n for n in args.names if n not in found]
    if unknown:
        parser.error(f"no benchmark {', '.join(unknown)}; there are: {', '.join(found)}")
    planned = [found[n] for n in args.names] if args.names else list(found.values())
    runs: list[Run] = []
    for path in planned:
        runs.append(run_one(path, args.quick, args.timeout))
        if runs[-1].interrupted:
            break
    report(runs, planned)
    if runs and runs[-1].interrupted:
        return 130
    return 0 if all(r.ok for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
