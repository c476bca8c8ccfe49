"""The soak: `maka serve` under mixed webhook traffic for minutes (`make soak`: 10).

    .venv/bin/python -m tests.soak.soak [--minutes 10] [--database sqlite|postgresql]

The fault suite's world (tests/faults/harness.py) with no faults: the Feishu stand-in, the
scripted model stand-in, real `maka serve` processes. On the embedded default (SQLite, one
replica, which `maka serve` creates and migrates itself: what most users run), or with
`--database postgresql` on a private PostgreSQL cluster with two replicas behind the
alternating "load balancer" of the fault suite's traffic.

Traffic (tests/soak/ledger.py says what each kind expects): DMs from several users and the
owner, group messages with and without an @mention of the bot, slash commands (/help,
/whoami, /status) in DMs and groups, long messages (3 to 8 KB), and redeliveries of events
already sent, some at once (racing the first delivery), some up to half a minute later. The
model stand-in answers at once for 30 s, then takes 0.3 s a step for 30 s, and so on.

Every minute one line: inputs so far, redeliveries, lost (not answered 60 s after its
acceptance), duplicated, waiting, webhook ack latency (p50/p99, that minute's POSTs), reply
latency (p50/p99, from an input's first 2xx to the stand-in creating its reply, for replies
created that minute), and VmRSS of each replica. At the end, once every delivery is done and
the replicas are quiet: a summary, and exit 1 on any lost input, any duplicate, any answered
history message or "could not answer" reply, anything the fault suite's end checks find
wrong (not stored, acked but not stored, a 4xx, outbox rows not sent), or RSS growth beyond
10% from the end of the warm-up (minute 2) to the end of the last minute.

Bounded: the traffic stops after `--minutes`, the settling after SETTLE_BOUND seconds more; a
watchdog thread kills the replicas (and the cluster) and exits 3 if even the cleanup hangs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.fakes import Mention
from tests.faults.harness import OWNER, USERS, FaultWorld, Verdict, fault_world
from tests.faults.model import ping
from tests.faults.postgres import PrivateCluster
from tests.faults.traffic import Input, Traffic, dm_chat
from tests.soak.ledger import Expect, Kind, Ledger, percentile

MINUTE = 60.0
LOST_AFTER = 60.0  # while traffic runs, an input not answered this long after its 2xx is lost
RSS_LIMIT = 0.10  # growth allowed from the end of the warm-up to the end of the run
SETTLE_BOUND = 300.0  # seconds after the traffic for every delivery, and quiet
START_BOUND = 240.0  # the cluster, the stand-ins, the replicas ready
STOP_BOUND = 120.0  # the replicas drained (30 s each, then SIGKILL), the cluster gone
GROUPS = tuple(f"oc_soak_group{n}" for n in range(1, 4))
BOT = Mention("ou_bot", "Maka")  # the Feishu stand-in's bot
COMMANDS = ("/help", "/whoami", "/status")
# Of each tick of traffic: a new input of a kind, or a redelivery of one already sent.
MIX: dict[str, int] = {
    Kind.DM: 40,
    Kind.MENTION: 15,
    Kind.HISTORY: 15,
    Kind.COMMAND: 15,
    Kind.LONG: 5,
    "redelivery": 10,
}
MODEL_PHASE = 30.0  # seconds the model stand-in answers at once, then as long with a delay
MODEL_DELAY = 0.3  # seconds a Bot step takes in the slow phase
LOG_LINE = re.compile(r"^\S+ \S+ (WARNING|ERROR|CRITICAL) (\S+): (.*)$")


@dataclass
class Options:
    minutes: int = 10
    database: str = "sqlite"
    rate: float = 4.0  # ticks a second (MIX: 90% new inputs, 10% redeliveries)
    warmup: int = 2
    seed: int = 16
    keep: bool = False

    @property
    def replicas(self) -> int:
        return 1 if self.database == "sqlite" else 2


@dataclass
class Minute:
    number: int
    inputs: int
    redeliveries: int
    lost: int
    duplicated: int
    waiting: int
    ack: tuple[float | None, float | None]  # p50, p99 seconds
    reply: tuple[float | None, float | None]
    rss: dict[str, int | None]  # replica -> VmRSS kB
    anon: dict[str, int | None]  # replica -> RssAnon kB (VmRSS less mapped files and shmem)

    def line(self, of: int) -> str:
        rss = ", ".join(
            f"{name} {_mb(kb)} (anon {_mb(self.anon.get(name))})" for name, kb in self.rss.items()
        )
        return (
            f"[soak] minute {self.number:2d}/{of}: inputs {self.inputs}, redelivered "
            f"{self.redeliveries}, lost {self.lost}, duplicated {self.duplicated}, waiting "
            f"{self.waiting} | ack p50 {_ms(self.ack[0])} p99 {_ms(self.ack[1])} | reply p50 "
            f"{_s(self.reply[0])} p99 {_s(self.reply[1])} | RSS {rss}"
        )


@dataclass
class Soak:
    world: FaultWorld
    traffic: Traffic
    options: Options
    ledger: Ledger
    rng: random.Random
    minutes: list[Minute] = field(default_factory=list)
    redeliveries: int = 0
    _numbers: int = 0
    _recent: deque[Input] = field(default_factory=lambda: deque(maxlen=100))

    # --- traffic ---------------------------------------------------------------------------
    async def run_traffic(self) -> None:
        """Ticks at `rate` for `minutes`; a line at the end of each minute."""
        options = self.options
        start = time.monotonic()
        end = start + options.minutes * MINUTE
        lines = asyncio.create_task(self._minute_lines(start), name="soak-minutes")
        interval = 1.0 / options.rate
        kinds, weights = list(MIX), list(MIX.values())
        try:
            for tick in range(round(options.rate * options.minutes * MINUTE)):
                at = start + tick * interval
                await self._sleep_until(at)
                slow = int((at - start) // MODEL_PHASE) % 2
                self.world.model.slow(MODEL_DELAY if slow else 0.0)
                choice = self.rng.choices(kinds, weights)[0]
                if choice == "redelivery":
                    self.redeliver(remaining=end - at)
                else:
                    self.send(Kind(choice))
            await lines
        finally:
            lines.cancel()

    async def _minute_lines(self, start: float) -> None:
        for number in range(1, self.options.minutes + 1):
            await self._sleep_until(start + number * MINUTE)
            self.report(number, since=start + (number - 1) * MINUTE, now=time.monotonic())

    @staticmethod
    async def _sleep_until(at: float) -> None:
        pause = at - time.monotonic()
        if pause > 0:
            await asyncio.sleep(pause)

    def send(self, kind: Kind) -> Input:
        self._numbers += 1
        token = f"soak-{self._numbers:05d}"
        rng = self.rng
        group = rng.choice(GROUPS)
        user = rng.choice(USERS)
        if kind is Kind.DM:
            user = rng.choice((OWNER, *USERS))
            item = self._dm(user, ping(token), token)
        elif kind is Kind.MENTION:
            item = self._group(group, user, f"@_user_1 {ping(token)}", token, [BOT])
        elif kind is Kind.HISTORY:  # sometimes naming someone else: still not the bot
            other = Mention(rng.choice(USERS), "colleague")
            if rng.random() < 0.5:
                item = self._group(group, user, f"@_user_1 {ping(token)}", token, [other])
            else:
                item = self._group(group, user, ping(token), token, [])
        elif kind is Kind.COMMAND:
            user = OWNER if rng.random() < 1 / 3 else user
            command = rng.choice(COMMANDS)
            if rng.random() < 0.6:
                item = self._dm(user, command, token)
            else:
                item = self._group(group, user, f"@_user_1 {command}", token, [BOT])
        else:
            text = f"{ping(token)}\n{filler(rng, rng.randint(3_000, 8_000))}"
            if rng.random() < 0.5:
                item = self._dm(user, text, token)
            else:
                item = self._group(group, user, f"@_user_1 {text}", token, [BOT])
        self.ledger.add(item, kind)
        self._recent.append(item)
        return item

    def _dm(self, user: str, text: str, token: str) -> Input:
        return self.traffic.send_message(text, user=user, chat_id=dm_chat(user), token=token)

    def _group(
        self, chat_id: str, user: str, text: str, token: str, mentions: Sequence[Mention]
    ) -> Input:
        return self.traffic.send_message(
            text, user=user, chat_id=chat_id, chat_type="group", mentions=mentions, token=token
        )

    def redeliver(self, *, remaining: float) -> None:
        """The newest input at once (racing its first delivery), or a recent one later."""
        if not self._recent:
            return
        if self.rng.random() < 1 / 3:
            item, after = self._recent[-1], self.rng.uniform(0.0, 0.2)
        else:
            item, after = self.rng.choice(self._recent), self.rng.uniform(1.0, 30.0)
        self.traffic.redeliver(item, after=max(0.0, min(after, remaining)))
        self.redeliveries += 1

    # --- the per-minute line -----------------------------------------------------------------
    def report(self, number: int, *, since: float, now: float) -> Minute:
        ledger = self.ledger
        ledger.update(self.world.feishu.sent, self.world.feishu.created_at)
        acks = [
            took
            for a in self.traffic.attempts
            if since <= a.at < now and (took := a.took) is not None
        ]
        replies = ledger.latencies(since, now)
        minute = Minute(
            number=number,
            inputs=len(self.traffic.inputs),
            redeliveries=self.redeliveries,
            lost=len(ledger.lost(now=now, grace=LOST_AFTER)),
            duplicated=len(ledger.duplicated()),
            waiting=ledger.waiting(),
            ack=(percentile(acks, 50), percentile(acks, 99)),
            reply=(percentile(replies, 50), percentile(replies, 99)),
            rss={r.name: vm_rss(r.pid) for r in self.world.replicas},
            anon={r.name: vm_rss(r.pid, "RssAnon") for r in self.world.replicas},
        )
        self.minutes.append(minute)
        print(minute.line(self.options.minutes), flush=True)
        self.world.model.log.clear()  # every request's body, prompts and all: not needed
        return minute

    # --- the end -----------------------------------------------------------------------------
    async def settle(self) -> tuple[Verdict, float]:
        """Every delivery done, every input handled and reply sent; the fault suite's verdict
        and the seconds it took."""
        start = time.monotonic()
        self.world.model.slow(0.0)
        await self.traffic.drain()
        await self.world.wait_quiet()
        verdict = await self.world.verdict(self.traffic)
        self.ledger.update(self.world.feishu.sent, self.world.feishu.created_at)
        return verdict, time.monotonic() - start

    def problems(self, verdict: Verdict) -> list[str]:
        ledger, found = self.ledger, []
        if lost := ledger.lost():
            kinds = Counter(ledger.kinds[t].value for t in lost)
            found.append(
                f"lost (accepted, never answered): {len(lost)} ({_counts(kinds)}): "
                + "; ".join(self.describe(t) for t in lost[:10])
            )
        if duplicated := ledger.duplicated():
            found.append(f"duplicated (answered more than once): {len(duplicated)}: {duplicated}")
        if unwanted := ledger.unwanted():
            found.append(f"history messages answered: {len(unwanted)}: {unwanted}")
        if ledger.apologies:
            n = len(ledger.apologies)
            found.append(f"'could not answer' replies (the model stand-in never fails): {n}")
        if verdict.undelivered:
            found.append(f"never accepted by a replica: {verdict.undelivered[:10]}")
        if verdict.false_acks:
            found.append(f"answered 2xx but not stored: {verdict.false_acks[:10]}")
        refused = {s: n for s, n in verdict.webhook_statuses.items() if s.startswith("4")}
        if refused:
            found.append(f"webhook answered 4xx to valid events: {refused}")
        if verdict.stored != verdict.inputs:
            found.append(f"stored {verdict.stored} of {verdict.inputs} inputs")
        by_message = {i.message_id: t for t, i in self.traffic.inputs.items()}
        wrong_inbox = {
            by_message[m]: n
            for m, n in verdict.inbox_rows.items()
            if n != (0 if ledger.expect(by_message[m]) is Expect.NONE else 1)
        }
        if wrong_inbox:
            found.append(f"inbox items per input not as expected: {wrong_inbox}")
        unsettled = {s: n for s, n in verdict.outbox_states.items() if s != "sent"}
        if unsettled:
            found.append(f"outbox rows not sent: {unsettled}")
        found += self.rss_problems()
        return found

    def describe(self, token: str) -> str:
        item = self.traffic.inputs[token]
        text = json.loads(item.event["event"]["message"]["content"])["text"]
        kind = self.ledger.kinds[token].value
        return f"{token} {kind} {text[:40]!r} from {item.user} in {item.chat_id}"

    def rss_growth(self) -> dict[str, tuple[int, int, float]]:
        """Replica -> (kB at the end of the warm-up, kB at the end, growth)."""
        warm, last = self.options.warmup, self.minutes[-1] if self.minutes else None
        if last is None or len(self.minutes) <= warm:
            return {}
        base = self.minutes[warm - 1]
        growth = {}
        for name, kb in last.rss.items():
            before = base.rss.get(name)
            if kb is not None and before:
                growth[name] = (before, kb, kb / before - 1)
        return growth

    def rss_problems(self) -> list[str]:
        if len(self.minutes) <= self.options.warmup:
            return []
        growth = self.rss_growth()
        found = [
            f"RSS of {name} grew {g:+.1%} from minute {self.options.warmup} to minute "
            f"{len(self.minutes)} ({_mb(before)} to {_mb(after)}; limit {RSS_LIMIT:+.0%})"
            for name, (before, after, g) in growth.items()
            if g > RSS_LIMIT
        ]
        missing = [r.name for r in self.world.replicas if r.name not in growth]
        if missing:
            found.append(f"no RSS for {missing} (not running?)")
        return found

    def summary(self, verdict: Verdict, settled_in: float) -> list[str]:
        ledger, traffic, options = self.ledger, self.traffic, self.options
        kinds = Counter(ledger.kinds.values())
        addressed = ledger.addressed()
        once = sum(1 for t in addressed if ledger.answers[t] == 1)
        acks = [t for a in traffic.attempts if (t := a.took) is not None]
        replies = ledger.latencies()
        redelivered = Counter(
            _outcome(a.detail) if a.ok else str(a.status or "no answer")
            for a in traffic.attempts
            if a.redelivery
        )
        lines = [
            f"[soak] {options.minutes} minutes on {options.database} "
            f"({options.replicas} replica{'s' if options.replicas > 1 else ''}), "
            f"{options.rate:g} ticks/s, seed {options.seed}: {len(traffic.inputs)} inputs ("
            + ", ".join(f"{k.value} {kinds[k]}" for k in Kind)
            + f"), {self.redeliveries} redeliveries",
            f"[soak] answered once {once} of {len(addressed)} to be answered; lost "
            f"{len(ledger.lost())}, duplicated {len(ledger.duplicated())}, history answered "
            f"{len(ledger.unwanted())} of {kinds[Kind.HISTORY]}, 'could not answer' "
            f"{len(ledger.apologies)}, other messages {len(ledger.strays)}",
            f"[soak] webhook: answers {dict(verdict.webhook_statuses)}; redeliveries answered "
            f"{dict(redelivered)}; ack p50 {_ms(percentile(acks, 50))} p99 "
            f"{_ms(percentile(acks, 99))} max {_ms(max(acks, default=None))}",
            f"[soak] replies: p50 {_s(percentile(replies, 50))} p99 {_s(percentile(replies, 99))}"
            f" max {_s(max(replies, default=None))} from acceptance; outbox "
            f"{dict(verdict.outbox_states)}; Feishu sends {verdict.send_requests} (resent uuids "
            f"{verdict.resent_uuids}); model: {self.world.model.bot_requests} Bot steps, "
            f"{self.world.model.other_requests} other calls; settled {settled_in:.1f}s after "
            "the traffic",
        ]
        series = {
            r.name: [f"{_mb(m.rss.get(r.name))}/{_mb(m.anon.get(r.name))}" for m in self.minutes]
            for r in self.world.replicas
        }
        growth = self.rss_growth()
        for name, values in series.items():
            if name in growth:
                before, after, g = growth[name]
                verdict_text = (
                    f"minute {options.warmup} (end of warm-up) {_mb(before)} -> minute "
                    f"{len(self.minutes)} {_mb(after)}: {g:+.1%} (limit {RSS_LIMIT:+.0%})"
                )
            else:
                verdict_text = f"not checked: a run of {options.warmup} minutes or less is warm-up"
            lines.append(
                f"[soak] RSS/anon {name} by minute: {' '.join(values)}; VmRSS {verdict_text}"
            )
        lines += log_findings(self.world)
        return lines


def filler(rng: random.Random, size: int) -> str:
    """About `size` bytes of text in lines, some of it Chinese (3 bytes a character)."""
    words = ("budget", "contract", "meeting", "schedule", "report", "预算", "合同", "会议", "周报")
    lines, total = [], 0
    while total < size:
        line = " ".join(rng.choice(words) for _ in range(12))
        lines.append(line)
        total += len(line.encode()) + 1
    return "\n".join(lines)


def vm_rss(pid: int | None, field: str = "VmRSS") -> int | None:
    """VmRSS (or another kB `field` of /proc/PID/status) of `pid` (None: no such process)."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def log_findings(world: FaultWorld, shown: int = 8) -> list[str]:
    """Warnings and errors in the replicas' logs, counted by logger and message."""
    lines = []
    for replica in world.replicas:
        levels: Counter[str] = Counter()
        messages: Counter[str] = Counter()
        tracebacks = 0
        try:
            text = replica.log.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            lines.append(f"[soak] log of {replica.name}: unreadable ({exc})")
            continue
        for line in text.splitlines():
            if line.startswith("Traceback"):
                tracebacks += 1
            match = LOG_LINE.match(line)
            if match:
                level, logger, message = match.groups()
                levels[level] += 1
                messages[f"{level} {logger}: {_generic(message)[:160]}"] += 1
        counts = ", ".join(f"{n} {level}" for level, n in sorted(levels.items())) or "none"
        lines.append(
            f"[soak] log of {replica.name}: warnings and errors: {counts}; tracebacks {tracebacks}"
        )
        lines += [f"[soak]   {n} x {m}" for m, n in messages.most_common(shown)]
    return lines


def _generic(message: str) -> str:
    """A log message with its ids and numbers blanked, so like lines count together."""
    return re.sub(r"\b(om|oc|ou|soak)[-_]\w+|\d+(\.\d+)?", "#", message)


def _outcome(detail: str) -> str:
    try:
        return str(json.loads(detail).get("outcome", "2xx"))
    except (ValueError, AttributeError):
        return "2xx"


def _counts(counter: Counter[str]) -> str:
    return ", ".join(f"{k} {n}" for k, n in counter.most_common())


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.0f}ms"


def _s(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.2f}s"


def _mb(kb: int | None) -> str:
    return "-" if kb is None else f"{kb / 1024:.1f}MB"


class Watchdog:
    """The backstop of the bound: past `seconds`, SIGKILL the replicas, stop the cluster
    (`immediate`) and exit 3, whatever the event loop is doing."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.world: FaultWorld | None = None
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True

    def __enter__(self) -> Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._timer.cancel()

    def _fire(self) -> None:
        print(f"[soak] FAIL: still running {self.seconds:.0f}s after the start; killing it all")
        sys.stdout.flush()
        world = self.world
        if world is not None:
            for replica in world.replicas:
                for pid in replica.pids:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
            if isinstance(world.database, PrivateCluster):
                cluster = world.database
                with contextlib.suppress(OSError, subprocess.SubprocessError):
                    pg_ctl = str(cluster.bin_dir / "pg_ctl")
                    subprocess.run(
                        [pg_ctl, "stop", "-m", "immediate", "-D", str(cluster.data)],
                        user=cluster.user,
                        cwd=cluster.root,
                        timeout=30,
                        check=False,
                        capture_output=True,
                    )
            print(f"[soak] logs kept in {world.workdir}", flush=True)
        os._exit(3)


async def soak(options: Options, workdir: Path, watchdog: Watchdog) -> int:
    main = asyncio.current_task()
    assert main is not None
    # SIGTERM (or SIGINT) stops the soak like a failure: the replicas are stopped, not orphaned.
    for signum in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(signum, main.cancel)
    mix = ", ".join(f"{kind} {n}" for kind, n in MIX.items())
    print(
        f"[soak] {options.minutes} minutes on {options.database}, {options.rate:g} ticks/s "
        f"(of 100 ticks: {mix}); lost = not answered {LOST_AFTER:.0f}s after acceptance; "
        f"RSS compared from minute {options.warmup} (end of warm-up) to the last; "
        f"logs in {workdir}",
        flush=True,
    )
    async with fault_world(workdir, options.replicas, database=options.database) as world:
        watchdog.world = world
        for group in GROUPS:
            world.feishu.add_chat(group, name=group.removeprefix("oc_"), chat_type="group")
        print(
            "[soak] ready: "
            + ", ".join(f"{r.name} pid {r.pid} {_mb(vm_rss(r.pid))}" for r in world.replicas),
            flush=True,
        )
        async with world.traffic("soak") as traffic:
            run = Soak(world, traffic, options, Ledger(traffic.inputs), random.Random(options.seed))
            await run.run_traffic()
            try:
                async with asyncio.timeout(SETTLE_BOUND):
                    verdict, settled_in = await run.settle()
            except (TimeoutError, AssertionError) as exc:  # AssertionError: a wait's deadline
                run.ledger.update(world.feishu.sent, world.feishu.created_at)
                why = str(exc)[:2000] or f"over {SETTLE_BOUND:.0f}s"
                print(f"[soak] FAIL: deliveries and replies not settled after the traffic: {why}")
                print(f"[soak] lost so far: {run.ledger.lost()[:20]}", flush=True)
                return 1
        for line in run.summary(verdict, settled_in):
            print(line, flush=True)
        problems = run.problems(verdict)
        for problem in problems:
            print(f"[soak] FAIL: {problem}", flush=True)
        if problems:
            return 1
        print("[soak] PASS: nothing lost, nothing doubled, RSS within bounds", flush=True)
        return 0


def parse(argv: Sequence[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(
        prog="python -m tests.soak.soak", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--minutes", type=int, default=Options.minutes)
    parser.add_argument("--database", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--rate", type=float, default=Options.rate, help="ticks a second")
    parser.add_argument("--warmup", type=int, default=Options.warmup, help="minutes")
    parser.add_argument("--seed", type=int, default=Options.seed)
    parser.add_argument("--keep", action="store_true", help="keep the logs of a clean run too")
    args = parser.parse_args(argv)
    if args.minutes < 1 or args.rate <= 0 or args.warmup < 1:
        parser.error("--minutes and --warmup are at least 1, --rate above 0")
    return Options(args.minutes, args.database, args.rate, args.warmup, args.seed, args.keep)


def main(argv: Sequence[str] | None = None) -> int:
    options = parse(argv)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    workdir = Path(tempfile.mkdtemp(prefix=f"maka-soak-{options.database}-"))
    bound = START_BOUND + options.minutes * MINUTE + SETTLE_BOUND + STOP_BOUND
    code = 2
    with Watchdog(bound) as watchdog:
        try:
            code = asyncio.run(soak(options, workdir, watchdog))
        except (asyncio.CancelledError, KeyboardInterrupt):
            print("[soak] FAIL: interrupted", flush=True)
            code = 130
        except Exception as exc:  # could not run at all: say why, in one place
            print(f"[soak] FAIL: {type(exc).__name__}: {exc}", flush=True)
    if code == 0 and not options.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        print(f"[soak] logs kept in {workdir}", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
