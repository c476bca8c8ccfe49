"""benchmarks/conversations.py's output: a table line per run, the summary lines
(benchmarks/_summary.py) and the verdict on issue 19's targets."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from _conversation_plan import (
    BURST_LATENCY,
    BURST_SIZE,
    BURST_WITHIN,
    CALLS_PER_TURN,
    NAME,
    PG_ACKS_OF_SQLITE,
    REPLIES_PER_ACK,
    Result,
)
from _summary import emit

from tests.soak.ledger import percentile


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.0f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def _ms_per_input(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def line(r: Result) -> str:
    cpu = " ".join(f"{k} {_pct(v)}%" for k, v in r.cpu.items())
    ratio = "-" if r.vs_ideal is None else f"{r.vs_ideal:.2f}"
    return (
        f"{r.database:<10} {r.plan.latency:>4g}s {r.plan.shape:>11} "
        f"{r.acks_per_s:>7.1f} {_ms(percentile(r.ack_times, 50)):>5} "
        f"{_ms(percentile(r.ack_times, 99)):>5} "
        f"{r.replies_per_s:>9.1f} {r.replies_per_s / r.acks_per_s:>6.2f} "
        f"{_s(percentile(r.reply_delays, 50)):>6} {_s(percentile(r.reply_delays, 99)):>6} "
        f"{_s(percentile(r.queued, 50)):>6} {_s(percentile(r.sent, 50)):>6} "
        f"{r.answered:>7.1f} {r.turns:>5} {r.steps / max(1, r.turns):>5.2f} "
        f"{r.peak_calls:>4}/{r.concurrency:<4} {ratio:>6} "
        f"{_ms_per_input(r.cpu_ms_per_input):>6}  {cpu}"
    )


HEADER = (
    f"{'database':<10} {'model':>5} {'N×M':>11} {'acks/s':>7} {'a p50':>5} {'a p99':>5} "
    f"{'replies/s':>9} {'r÷a':>6} "
    f"{'p50 s':>6} {'p99 s':>6} {'→q p50':>6} {'q→ p50':>6} {'last s':>7} {'turns':>5} "
    f"{'st/t':>5} {'peak/conc':>9} {'÷ideal':>6} {'ms/in':>6}  CPU (% of a core)"
)
LEGEND = (
    "a p50/p99 = webhook answer time, ms; r÷a = replies/s ÷ acks/s; p50/p99 = reply latency "
    "from the 2xx, s; →q = 2xx to the reply's outbox row, q→ = outbox row to Feishu creating "
    "it; last = first send to last reply; st/t = model calls per turn; peak/conc = Bot model "
    "calls in flight at once (peak) / configured concurrency; ÷ideal = replies/s ÷ "
    "(concurrency ÷ latency); ms/in = CPU ms of maka serve per input (its ack and reply)"
)


def verdict_line(ok: bool, text: str) -> str:
    return f"{'PASS' if ok else 'MISS'}  {text}"


def debounce_bound(r: Result, debounce: float) -> float:
    """The highest replies/s ÷ acks/s a closed-loop run could show: the last input's burst
    window closes a debounce after it was acked, so the last reply comes no sooner (and
    replies/s ÷ acks/s is the sending time ÷ the answering time)."""
    return r.sending / (r.sending + debounce) if r.sending > 0 else 1.0


def summarize(
    everything: list[Result], concurrency: int, debounce: float
) -> tuple[list[str], bool]:
    """The summary lines (emitted) and the target checks (returned as lines, and all met?)."""
    results = [r for r in everything if not r.plan.burst and not r.plan.rate]
    bursts = [r for r in everything if r.plan.burst]
    checks: list[str] = []
    met = True
    # The targets are stated for the issue's `wrk -c32` run (`Plan.judged`); open-loop runs
    # and instant runs of several messages a conversation are reported beside them.
    judged = [r for r in results if r.plan.judged]
    for (database, shape), runs in _grouped(judged, lambda r: (r.database, r.plan.shape)):
        r = median_of(runs, lambda r: r.replies_per_s / r.acks_per_s)
        emit(
            NAME,
            f"replies/s ÷ acks/s, instant model, {database}",
            r.replies_per_s,
            r.acks_per_s,
            unit="messages/s",
            better="higher",
            baseline_what="acks/s, same run" + _of_rounds(runs),
        )
        ok = r.replies_per_s >= REPLIES_PER_ACK * r.acks_per_s
        met &= ok
        checks.append(
            verdict_line(
                ok,
                f"{database}, instant model, {shape}: replies/s {r.replies_per_s:.1f} "
                f"is {r.replies_per_s / r.acks_per_s:.0%} of acks/s {r.acks_per_s:.1f}"
                + _rounds_said(runs, [x.replies_per_s / x.acks_per_s for x in runs])
                + f" (target >= {REPLIES_PER_ACK:.0%}; at most "
                f"{debounce_bound(r, debounce):.0%} with turns that cost nothing)",
            )
        )
    for shape, runs in _grouped(judged, lambda r: r.plan.shape):
        pairs = [
            (pg, lite)
            for pg in runs
            if pg.database == "postgresql"
            for lite in runs
            if lite.database == "sqlite" and lite.plan.round == pg.plan.round
        ]
        if not pairs:
            continue
        pg_run, lite_run = median_of(pairs, lambda p: p[0].acks_per_s / p[1].acks_per_s)
        pg, lite = pg_run.acks_per_s, lite_run.acks_per_s
        emit(
            NAME,
            "acks/s, postgresql",
            pg,
            lite,
            unit="messages/s",
            better="higher",
            baseline_what="sqlite acks/s, same benchmark run" + _of_rounds(pairs),
        )
        ok = pg >= PG_ACKS_OF_SQLITE * lite
        met &= ok
        checks.append(
            verdict_line(
                ok,
                f"instant model, {shape}: PostgreSQL acks/s {pg:.1f} is {pg / lite:.0%} of "
                f"SQLite's {lite:.1f}"
                + _rounds_said(pairs, [p.acks_per_s / q.acks_per_s for p, q in pairs])
                + f" (target >= {PG_ACKS_OF_SQLITE:.0%})",
            )
        )
    for r in results:
        if r.plan.latency == 0 and not r.plan.judged and r.acks_per_s > 0:
            checks.append(
                f"----  {r.database}, instant model, {r.plan.shape}: replies/s "
                f"{r.replies_per_s:.1f} is {r.replies_per_s / r.acks_per_s:.0%} of acks/s "
                f"{r.acks_per_s:.1f}; with {r.plan.messages} messages a conversation inside its "
                f"{debounce:g} s burst window, at most {debounce_bound(r, debounce):.0%} "
                "with turns that cost nothing (the targets are stated for one message a "
                "conversation)"
            )
    for r in results:
        if r.plan.latency > 0 and r.ideal_per_s is not None:
            emit(
                NAME,
                f"replies/s, {r.plan.latency:g} s model, {r.database}",
                r.replies_per_s,
                r.ideal_per_s,
                unit="messages/s",
                better="higher",
                baseline_what=f"concurrency {concurrency} ÷ {r.plan.latency:g} s",
            )
    for r in everything:
        if r.plan.rate:
            checks.append(
                f"----  {r.database}, open loop at {r.plan.rate:g}/s, {r.plan.latency:g} s "
                f"model: acks/s {r.acks_per_s:.1f}, replies/s {r.replies_per_s:.1f} "
                f"({r.replies_per_s / r.plan.rate:.0%} of the offered rate), reply p50 "
                f"{_s(percentile(r.reply_delays, 50))} s, p99 "
                f"{_s(percentile(r.reply_delays, 99))} s"
            )
    for b in bursts:
        ideal = b.plan.latency * CALLS_PER_TURN
        emit(
            NAME,
            f"{b.plan.conversations} DMs at once, {b.plan.latency:g} s model: last answered "
            f"after, {b.database}",
            b.answered,
            ideal,
            unit="s",
            better="lower",
            baseline_what=f"one {b.plan.latency:g} s model call (no queueing)",
        )
        if b.plan.conversations >= BURST_SIZE and b.plan.latency == BURST_LATENCY:
            ok = b.answered <= BURST_WITHIN
            met &= ok
            checks.append(
                verdict_line(
                    ok,
                    f"{b.database}: {b.plan.conversations} DMs at once, "
                    f"{b.plan.latency:g} s model, all answered after {b.answered:.1f} s "
                    f"(target <= {BURST_WITHIN:.0f} s)",
                )
            )
        else:
            checks.append(
                f"----  {b.database}: a burst of {b.plan.conversations} (the target is stated "
                f"for {BURST_SIZE} at {BURST_LATENCY:g} s): answered after {b.answered:.1f} s"
            )
    return checks, met


def statuses(results: list[Result]) -> str:
    retried = sum(r.not_2xx for r in results)
    ack = [t for r in results for t in r.ack_times]
    return (
        f"webhook: {sum(r.inputs for r in results)} inputs accepted, {retried} attempts not "
        f"answered 2xx (delivered again); ack p50 {_ms(percentile(ack, 50))} ms, p99 "
        f"{_ms(percentile(ack, 99))} ms; model calls other than Bot turns "
        f"{sum(r.other_calls for r in results)}"
    )


K = TypeVar("K")
T = TypeVar("T")


def _grouped(items: Sequence[T], key: Callable[[T], K]) -> list[tuple[K, list[T]]]:
    """`items` by `key`, in the order each key first comes."""
    groups: dict[K, list[T]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return list(groups.items())


def median_of(items: Sequence[T], value: Callable[[T], float]) -> T:
    """The item whose value is the median (the lower of the middle two, for an even count):
    a round's own figures, not a mix of rounds."""
    return sorted(items, key=value)[(len(items) - 1) // 2]


def _of_rounds(items: Sequence[object]) -> str:
    return f"; the median of {len(items)} rounds" if len(items) > 1 else ""


def _rounds_said(items: Sequence[object], ratios: list[float]) -> str:
    if len(items) < 2:
        return ""
    return f", the median of {len(items)} rounds ({', '.join(f'{x:.0%}' for x in ratios)})"
