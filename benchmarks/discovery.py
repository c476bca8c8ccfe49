"""Discovery cost benchmark, run by hand: `.venv/bin/python benchmarks/discovery.py` (`make bench`
runs it with the defaults; `--quick` simulates 2 days instead of 7).

What it measures: the model calls and tokens proactive discovery (bot/discovery/) spends per
day over a simulated week with a realistic trickle of new chat records, with the heartbeat's
pre-check (bot/discovery/precheck.py) beside a "full round every tick" baseline computed in
the same run over the same trickle.

The week: Monday 00:00 to Sunday 23:30 in the owner's zone (UTC+8), a heartbeat every 30
minutes (336 beats; 96 with `--quick`), each driven by calling `DiscoveryWorker.beat(now)`
with the simulated `now` (no Host, no sleeping). Each run has its own SQLite database in a
temp dir, migrated as in production, with the discovery state on the defaults (interval
1800 s, deep round every 7 days) except the daily budget, set to 10,000,000 tokens so it never
interferes: the comparison is about the pre-check. An owner DM exists, so findings are
queued in the Bot's inbox; the owner never answers them (the feedback signal stays still).

The trickle (seeded, the same in every run): 200 records of the week before, already there
at the first beat; then chat messages in four chats, arriving in bursts of 1-8 messages
15-180 s apart. Weekdays: 20-60 messages a day, 85% of bursts between 9:00 and 19:00, 10%
in the evening (19-23), 5% early (7-9), none in the night. Saturday 0-6 messages and Sunday
0-3, between 10:00 and 22:00. A record is inserted (`storage.repos.source_records.insert_records`)
and indexed (`record_document` into the search index, as the source indexer does) at the
first beat at or after it was sent; the table counts it on the day it was sent.

The runs:
1. pre-check: the production heartbeat, a round only when the pre-check says so.
2. pre-check + quiet hours 22-8: the same, with quiet hours set.
3. every tick (the baseline): before each beat the state's `run_requested` is set, as
   `/discovery run` does, so every beat runs a full round through the production path
   (`DiscoveryWorker.beat` -> pre-check says "asked for" -> `RoundRunner.run`: Discovery then
   Judgement, watermark and findings stored as usual). It is the cost of a turn every tick.
The runs go beat by beat, the two pre-check runs side by side in one process (sharing one
embedded tantivy index: they store the same records at the same beats, under the same refs),
the baseline in a second process with its own index.

The model is a SCRIPTED STAND-IN (`ScriptedProvider` with responders that never run out,
answering instantly). Discovery searches memory once (`memory_search`, a seeded query), appends
one short note (`note_append`) when a hit is newer than every ref its notebook shows, and
ends (`pass_end`). Judgement ends at once, except when the notebook's newest note is not told
yet and its id is a multiple of 4: then it emits a finding (`finding_emit`) with that note's
ref first. So a round is 3-5 calls. TOKENS ARE THE STAND-IN'S ESTIMATE (bot/llm/tokens.py: a
CJK character one, other text ~4 characters a token) of the real inputs: the production
prompts, briefings (the notebook, earlier findings), tool results and tool schemas, so they
scale with what production sends, but a real model's tokenizer and its wordier replies would
change the absolute numbers.

Counting: calls and tokens are read back from `model_calls` (purposes `discovery_turn`,
`judgement_turn`), written by `DatabaseRecorder` as in production, except that each row is
stamped with the simulated beat time instead of the wall clock (so the rows group by
simulated day and the daily budget counts simulated days); the per-day call counts are
checked against the stand-ins' own request counts.

The defaults take about 25 s on a busy 2-core machine (the baseline's process is the long
pole; `--quick` about 9 s). No targets: the numbers are for comparing runs. At the end one
summary line (benchmarks/_summary.py) each for the pre-check run's tokens and model calls,
beside the baseline's. The exit status
is 1 only when a result is wrong: a pre-check run made more calls or tokens than the
baseline, a round ran with nothing new (and no deep round, feedback or deadline reason), news
was skipped as "nothing new", a round failed, the budget skipped a beat, a tool refused the
stand-in, or `model_calls` disagrees with the stand-ins' request counts.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import random
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from _summary import emit
from sqlalchemy import func, select

from bot.assistant.visibility import Visibility
from bot.discovery.heartbeat import DiscoveryWorker
from bot.discovery.passes import DISCOVERY_PROMPT, JUDGEMENT_PROMPT, PURPOSES, Pass
from bot.discovery.rounds import RoundRunner
from bot.discovery.tools import KINDS, discovery_tools, judgement_tools
from bot.host.notify import Notifier
from bot.llm.client import ModelCallRecord, ModelClient
from bot.llm.recording import DatabaseRecorder
from bot.llm.scripted import PlannedReply, Responder, ScriptedProvider
from bot.llm.types import Completion, Message, ToolSpec
from bot.memory import recall
from bot.memory.search import SearchService
from bot.memory.source_index import record_document
from storage.db import Database, create_database
from storage.migrate import migrate
from storage.models import Finding, ModelCall, NotebookNote
from storage.repos import conversations, source_records, sources
from storage.repos import discovery as repo
from storage.repos.source_records import NewRecord
from storage.search.embedded import EmbeddedSearchIndex
from storage.search.tokenizer import configure_tokenizer, warm_up
from storage.urls import normalize_database_url

OWNER = "ou_bench_owner"
TZ = timezone(timedelta(hours=8), "UTC+8")
START = datetime(2025, 3, 3, tzinfo=TZ)  # a Monday, 00:00 in the owner's zone
TICK = timedelta(minutes=30)
TICKS_PER_DAY = 48
BUDGET = 10_000_000
DEFAULT_BUDGET = 50_000  # bot/config.py discovery_budget, for comparison only
DEFAULTS = repo.Defaults(
    enabled=True, interval_seconds=1800, quiet=None, budget_tokens=BUDGET,
    deep_every_seconds=7 * 86_400,
)  # fmt: skip
QUIET = (22, 8)
HISTORY = 200
Plan = tuple[str, bool, tuple[int, int] | None]  # name, every tick, quiet hours
CHECKED: Plan = ("pre-check", False, None)
QUIET_PLAN: Plan = (f"pre-check + quiet {QUIET[0]}-{QUIET[1]}", False, QUIET)
BASELINE: Plan = ("every tick (baseline)", True, None)
# Two processes of about equal work: the two pre-check runs side by side, and the baseline.
GROUPS = [[CHECKED, QUIET_PLAN], [BASELINE]]
# A round with no new record is right only for these reasons (precheck.LABELS, deep, asked).
OTHER_REASONS = ("deep round", "reacted", "index entries", "notebook notes", "Matters",
                 "deadlines", "asked for")  # fmt: skip

CHATS = [("oc_platform", "Platform team"), ("oc_release", "Release"),
         ("oc_budget", "Budget 2025"), ("oc_li", "Li Wei")]  # fmt: skip
PEOPLE = ["张伟", "王芳", "李娜", "刘洋", "陈静", "Alice", "Bob", "Carol"]
AUTHORS = [f"ou_member_{n}" for n in range(10)]
TOPICS = ["部署", "重连", "数据库迁移", "权限申请", "周报", "报销", "机器人回调", "灰度发布",
          "日志采集", "性能优化", "预算", "招聘", "contract", "vendor"]  # fmt: skip
TEMPLATES = [
    "{person}说{topic}又出问题了，日志里是 HTTP 502",
    "明天下午{h}点开会讨论{topic}，记得带上上周的数据",
    "Deploy to staging failed again, rolling back the {topic} change",
    "决定了：{topic}下周{day}上线，{person}负责",
    "The {topic} latency went up to {n}ms after yesterday's release",
    "{person}: 好的，我看一下{topic}，今天之内给你答复",
    "帮我记一下：{topic}需要在月底前完成，负责人是{person}",
    "Can you send me the {topic} numbers by Friday? {person} is waiting",
    "We agreed to freeze the budget for {topic} until Q{q}, {person} will confirm",
    "周{day}的周报：完成了{topic}，下周继续跟进",
    "ok",
    "收到 👍",
]
QUERIES = ["部署", "预算", "周报", "上线", "答复", "Friday", "budget", "release", "contract",
           "vendor", "latency", "staging", "负责人", "开会", "招聘"]  # fmt: skip

send = ScriptedProvider.tool_call
HIT = re.compile(r"^\[rec-(\d+)\][^']*'[^']*': (.*)$", re.MULTILINE)
NOTE = re.compile(r"^note-(\d+) \S+ \w+(?: \(due [^)]*\))?: (.*?) \[(rec-\d+)", re.MULTILINE)
REF_NUMBER = re.compile(r"rec-(\d+)")
REF = re.compile(r"rec-\d+")


# ---- the trickle -------------------------------------------------------------------------


def _text(rnd: random.Random) -> str:
    return rnd.choice(TEMPLATES).format(
        person=rnd.choice(PEOPLE), topic=rnd.choice(TOPICS), h=rnd.randint(1, 9),
        n=rnd.randint(50, 900), q=rnd.randint(1, 4), day=rnd.choice("一二三四五"),
    )  # fmt: skip


def _burst_start(rnd: random.Random, day: datetime) -> datetime:
    share = rnd.random()
    if day.weekday() >= 5:
        hours = rnd.uniform(10, 22)
    elif share < 0.85:
        hours = rnd.uniform(9, 19)
    elif share < 0.95:
        hours = rnd.uniform(19, 23)
    else:
        hours = rnd.uniform(7, 9)
    return day + timedelta(hours=hours)


def day_messages(rnd: random.Random, day: datetime) -> list[datetime]:
    """When the day's messages are sent: bursts in working hours, quieter weekends."""
    weekday = day.weekday()
    count = rnd.randint(20, 60) if weekday < 5 else rnd.randint(0, 6 if weekday == 5 else 3)
    times: list[datetime] = []
    while len(times) < count:
        at = _burst_start(rnd, day)
        for _ in range(min(count - len(times), rnd.choice((1, 1, 2, 3, 4, 6, 8)))):
            times.append(min(at, day + timedelta(hours=23, minutes=59)))
            at += timedelta(seconds=rnd.randint(15, 180))
    return sorted(times)


def trickle(days: int, seed: int) -> tuple[list[NewRecord], list[NewRecord]]:
    """(the week before, already there; the simulated days' records), each sorted by time."""
    rnd = random.Random(seed)
    serial = 0

    def record(at: datetime) -> NewRecord:
        nonlocal serial
        serial += 1
        chat, title = rnd.choice(CHATS)
        return NewRecord(
            source=f"feishu:{chat}", external_id=f"om_{serial:06d}", scope=f"group:{chat}",
            text=_text(rnd), sent_at=at, author=rnd.choice(AUTHORS), title=title,
        )  # fmt: skip

    before = START - timedelta(days=7)
    history = sorted(
        (before + timedelta(days=rnd.randint(0, 4), hours=rnd.uniform(9, 19)))
        for _ in range(HISTORY)
    )
    week = [t for d in range(days) for t in day_messages(rnd, START + timedelta(days=d))]
    return [record(t) for t in history], [record(t) for t in week]


# ---- the scripted stand-in ---------------------------------------------------------------


class StandIn:
    """The two passes' scripted model: deterministic (seeded), driven by what it is shown."""

    def __init__(self, seed: int) -> None:
        self.rnd = random.Random(seed)
        self.problems: list[str] = []

    def _refused(self, last: Message) -> bool:
        if last.role == "tool" and "\nerror: " in (last.content or ""):
            self.problems.append(f"a tool refused the stand-in: {(last.content or '')[:200]}")
            return True
        return False

    def discovery(self, messages: list[Message], _tools: list[ToolSpec]) -> PlannedReply:
        last = messages[-1]
        if last.role == "user":
            return send("memory_search", {"query": self.rnd.choice(QUERIES)})
        if not self._refused(last) and last.name == "memory_search":
            shown = messages[1].content or ""  # the briefing: the notebook's newest notes
            noted = max((int(n) for n in REF_NUMBER.findall(shown)), default=0)
            fresh = [(int(n), text) for n, text in HIT.findall(last.content or "")]
            fresh = [(n, text) for n, text in fresh if n > noted]
            if fresh:
                seq, text = max(fresh)
                note = " ".join(text.split())[:160] or f"something new in rec-{seq}"
                return send(
                    "note_append",
                    {"kind": KINDS[seq % len(KINDS)], "text": note, "refs": [f"rec-{seq}"]},
                )
        return send("pass_end", {})

    def judgement(self, messages: list[Message], _tools: list[ToolSpec]) -> PlannedReply:
        last = messages[-1]
        if last.role == "user":
            notebook, _, told = (last.content or "").partition("Findings already told")
            notes = NOTE.findall(notebook)
            if notes:
                note_id, text, ref = notes[-1]
                if int(note_id) % 4 == 0 and ref not in set(REF.findall(told)):
                    return send(
                        "finding_emit",
                        {"text": f"Worth a look (note-{note_id}): {text}"[:300], "refs": [ref]},
                    )
            return send("pass_end", {})
        self._refused(last)
        return send("pass_end", {})


class Endless(ScriptedProvider):
    """A `ScriptedProvider` whose responder never runs out."""

    def __init__(self, name: str, responder: Responder) -> None:
        super().__init__(name=name)
        self.responder = responder

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> Completion:
        if self.remaining == 0:
            self.add(*[self.responder] * 64)
        return await super().complete(
            messages, tools, max_tokens=max_tokens, temperature=temperature
        )


class SimulatedClockRecorder(DatabaseRecorder):
    """`DatabaseRecorder`, with each row stamped at the simulated beat time."""

    def __init__(self, db: Database) -> None:
        super().__init__(db)
        self.now = START

    async def record(self, call: ModelCallRecord) -> None:
        await super().record(dataclasses.replace(call, created_at=self.now))


# ---- one simulated week ------------------------------------------------------------------


@dataclass
class Day:
    records: int = 0
    rounds: int = 0
    skips: int = 0
    calls: int = 0  # from model_calls
    tokens: int = 0  # from model_calls, input + output
    requests: int = 0  # the stand-ins' own count


@dataclass
class RunResult:
    name: str
    days: list[Day]
    skip_reasons: Counter[str] = field(default_factory=Counter)
    notes: int = 0
    findings: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def rounds(self) -> int:
        return sum(d.rounds for d in self.days)

    @property
    def skips(self) -> int:
        return sum(d.skips for d in self.days)

    @property
    def calls(self) -> int:
        return sum(d.calls for d in self.days)

    @property
    def tokens(self) -> int:
        return sum(d.tokens for d in self.days)


async def sqlite_database(workdir: Path) -> Database:
    db = create_database(normalize_database_url(f"sqlite:///{workdir / 'maka.db'}"))
    await migrate(db)
    return db


class World:
    """One run: its own database, heartbeat, round runner and stand-ins; the search index is
    shared (every run stores the same records at the same beats, under the same refs)."""

    def __init__(
        self,
        db: Database,
        search: SearchService,
        name: str,
        *,
        every_tick: bool,
        quiet: tuple[int, int] | None,
        days: int,
        seed: int,
    ) -> None:
        self.db, self.name, self.every_tick = db, name, every_tick
        self.result = RunResult(name, [Day() for _ in range(days)])
        self.defaults = dataclasses.replace(DEFAULTS, quiet=quiet)
        self.model = StandIn(seed)
        self.discovery = Endless("discovery", self.model.discovery)
        self.judgement = Endless("judgement", self.model.judgement)
        self.recorder = SimulatedClockRecorder(db)
        owner_view = Visibility(everything=True, conversation_id=None)
        runner = RoundRunner(
            db, Notifier(), recall.MemoryAccess(db, search, owner_view, TZ),
            Pass(ModelClient(self.discovery, self.recorder), discovery_tools(),
                 purpose="discovery_turn", system=DISCOVERY_PROMPT, timeout=300),
            Pass(ModelClient(self.judgement, self.recorder), judgement_tools(),
                 purpose="judgement_turn", system=JUDGEMENT_PROMPT, timeout=300),
            owner=OWNER, tz=TZ,
        )  # fmt: skip
        self.worker = DiscoveryWorker(db, runner, self.defaults, owner="bench", tz=TZ,
                                      lease=timedelta(minutes=11))  # fmt: skip
        self.news = 0  # records in since the last round

    @property
    def requests(self) -> int:
        return len(self.discovery.requests) + len(self.judgement.requests)

    async def setup(self) -> None:
        async with self.db.write() as s:
            for chat, title in CHATS:
                await sources.ensure(s, name=f"feishu:{chat}", kind="feishu",
                                     scope=f"group:{chat}", title=title,
                                     now=START - timedelta(days=8))  # fmt: skip
            await conversations.get_or_create(
                s, platform="feishu", chat_id="oc_owner_dm", chat_type="p2p", peer_open_id=OWNER
            )

    async def arrive(self, records: list[NewRecord], now: datetime) -> None:
        async with self.db.write() as s:
            new = await source_records.insert_records(s, records, now)
        if len(new) != len(records):
            self.result.problems.append(f"{len(records) - len(new)} records not inserted")
        self.news += len(new)

    async def beat(self, tick: int, now: datetime) -> None:
        problems = self.result.problems
        day = self.result.days[tick // TICKS_PER_DAY]
        if self.every_tick:  # as /discovery run does
            async with self.db.write() as s:
                state = await repo.ensure_state(s, self.defaults, now)
                state.run_requested = True
        self.recorder.now = now
        before = self.requests
        beat = await self.worker.beat(now)
        day.requests += self.requests - before
        when = now.strftime("%a %H:%M")
        checked = not self.every_tick
        if beat.did == "round":
            day.rounds += 1
            if beat.round is None or beat.round.phase != "done":
                problems.append(f"{when}: round not done: {beat.round}")
            if checked and not self.news and not any(r in beat.reason for r in OTHER_REASONS):
                problems.append(f"{when}: a round with nothing new: {beat.reason}")
            if checked and not self.news and "new messages" in beat.reason:
                problems.append(f"{when}: 'new messages' with none: {beat.reason}")
            self.news = 0
        elif beat.did == "skipped":
            day.skips += 1
            self.result.skip_reasons[beat.reason] += 1
            if self.news and beat.reason == "nothing new since the last round":
                problems.append(f"{when}: skipped {self.news} new records as nothing new")
            if beat.reason.startswith("daily budget"):
                problems.append(f"{when}: the budget interfered: {beat.reason}")
        else:
            problems.append(f"{when}: a due heartbeat did nothing ({beat.did})")
        if self.every_tick and beat.did != "round":
            problems.append(f"{when}: the baseline did not run a round")

    async def collect(self) -> RunResult:
        """Calls and tokens per simulated day from `model_calls`, checked against the
        stand-ins' own counts; the notebook and the findings told."""
        result = self.result
        async with self.db.read() as s:
            rows = (
                await s.execute(
                    select(
                        ModelCall.created_at,
                        ModelCall.input_tokens + ModelCall.output_tokens,
                        ModelCall.error,
                    ).where(ModelCall.purpose.in_(PURPOSES))
                )
            ).all()
            result.notes = int(await s.scalar(select(func.count(NotebookNote.id))) or 0)
            told = select(func.count(Finding.id)).where(Finding.status.in_(repo.TOLD))
            result.findings = int(await s.scalar(told) or 0)
        for created_at, tokens, error in rows:
            day = result.days[(created_at - START) // timedelta(days=1)]
            day.calls += 1
            day.tokens += int(tokens)
            if error:
                result.problems.append(f"a model call failed: {error}")
        for n, d in enumerate(result.days):
            if d.calls != d.requests:
                result.problems.append(
                    f"day {n + 1}: {d.calls} model_calls rows, {d.requests} stand-in requests"
                )
        result.problems = [f"{self.name}: {p}" for p in result.problems + self.model.problems]
        return result


async def simulate(workdir: Path, plans: list[Plan], days: int, seed: int) -> list[RunResult]:
    """The runs side by side, beat by beat: before each beat the records sent since the last
    one are stored in every run's database and indexed once; then every run beats."""
    history, week = trickle(days, seed)
    search = SearchService(EmbeddedSearchIndex(workdir / "index"))
    dbs = [await sqlite_database(workdir / f"run{n}") for n in range(len(plans))]
    try:
        worlds = [
            World(db, search, name, every_tick=every_tick, quiet=quiet, days=days, seed=seed)
            for db, (name, every_tick, quiet) in zip(dbs, plans, strict=True)
        ]
        for w in worlds:
            await w.setup()

        async def arrive(records: list[NewRecord], now: datetime) -> None:
            if records:
                await asyncio.gather(*(w.arrive(records, now) for w in worlds))
                if not await search.upsert([record_document(r, None) for r in records]):
                    worlds[0].result.problems.append("the search index refused a batch")

        await arrive(history, START - timedelta(minutes=1))
        for w in worlds:
            w.news = len(history)  # the history is new to the first round
            for record in week:
                assert record.sent_at is not None
                w.result.days[(record.sent_at - START).days].records += 1
        pending = list(week)
        for tick in range(days * TICKS_PER_DAY):
            now = START + TICK * tick
            arrived = [r for r in pending if r.sent_at is not None and r.sent_at <= now]
            pending = pending[len(arrived) :]
            await arrive(arrived, now)
            await asyncio.gather(*(w.beat(tick, now) for w in worlds))
        return [await w.collect() for w in worlds]
    finally:
        await search.close()
        for db in dbs:
            await db.dispose()


# ---- report ------------------------------------------------------------------------------


def print_report(runs: list[RunResult], days: int, history: int) -> None:
    checked, quiet, baseline = runs
    print(
        f"\ndiscovery over a simulated {days}-day week (from Mon {START:%Y-%m-%d}, UTC+8), a "
        f"heartbeat every {TICK.seconds // 60} min ({days * TICKS_PER_DAY} beats), "
        f"{history} records of the week before already stored"
    )
    print(
        "model: a SCRIPTED STAND-IN (instant); tokens are its estimate (bot/llm/tokens.py) of "
        "the real prompts, briefings, tool results and tool schemas"
    )
    head = (
        f"{'day':<9} {'records':>7} | {'pre-check: rounds':>17} {'skips':>5} {'calls':>5} "
        f"{'tokens':>9} | {'every tick: calls':>17} {'tokens':>10} | {'ratio':>6}"
    )
    print(head)
    print("-" * len(head))
    for n, (a, b) in enumerate(zip(checked.days, baseline.days, strict=True)):
        label = (START + timedelta(days=n)).strftime("%a %m-%d")
        ratio = f"{b.tokens / a.tokens:.1f}x" if a.tokens else "-"
        print(
            f"{label:<9} {a.records:>7} | {a.rounds:>17} {a.skips:>5} {a.calls:>5} "
            f"{a.tokens:>9,} | {b.calls:>17} {b.tokens:>10,} | {ratio:>6}"
        )
    print("-" * len(head))
    records = sum(d.records for d in checked.days)
    total_ratio = f"{baseline.tokens / checked.tokens:.1f}x" if checked.tokens else "-"
    print(
        f"{'total':<9} {records:>7} | {checked.rounds:>17} {checked.skips:>5} "
        f"{checked.calls:>5} {checked.tokens:>9,} | {baseline.calls:>17} "
        f"{baseline.tokens:>10,} | {total_ratio:>6}"
    )
    print("(ratio: every-tick tokens / pre-check tokens)")

    print(
        f"\n{'run':<26} {'rounds':>6} {'skips':>5} {'calls':>6} {'tokens':>10} "
        f"{'tokens/day':>10} {'peak day':>9} {'of baseline':>11} {'notes':>5} {'told':>4}"
    )
    for r in (baseline, checked, quiet):
        share = f"{r.tokens / baseline.tokens:.1%}" if baseline.tokens else "-"
        peak = max(d.tokens for d in r.days)
        print(
            f"{r.name:<26} {r.rounds:>6} {r.skips:>5} {r.calls:>6} {r.tokens:>10,} "
            f"{r.tokens // days:>10,} {peak:>9,} {share:>11} {r.notes:>5} {r.findings:>4}"
        )
    for r in (checked, quiet):
        reasons = ", ".join(f"{n} {reason}" for reason, n in r.skip_reasons.most_common())
        print(f"skips, {r.name}: {reasons or 'none'}")
    over = [r.name for r in runs if max(d.tokens for d in r.days) > DEFAULT_BUDGET]
    print(
        f"the default daily budget ({DEFAULT_BUDGET:,} tokens, bot/config.py) would have cut: "
        f"{', '.join(over) or 'none of the runs'} (here it was {BUDGET:,}, out of the way)"
    )


# ---- main --------------------------------------------------------------------------------


def run_group(
    workdir: Path, plans: list[Plan], days: int, seed: int
) -> tuple[list[RunResult], float]:
    configure_tokenizer(workdir.parent / "jieba")
    warm_up()  # inherited loaded when forked
    started = time.perf_counter()
    runs = asyncio.run(simulate(workdir, plans, days, seed))
    return runs, time.perf_counter() - started


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    print(f"  3 runs in 2 processes, {args.days} simulated days...", file=sys.stderr)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="maka-discovery-bench-") as tmp:
        workdir = Path(tmp)
        configure_tokenizer(workdir / "jieba")
        warm_up()
        with ProcessPoolExecutor(max_workers=len(GROUPS)) as pool:
            futures = [
                pool.submit(run_group, workdir / f"group{n}", plans, args.days, args.seed)
                for n, plans in enumerate(GROUPS)
            ]
            done = [f.result() for f in futures]
    wall = time.perf_counter() - started
    (checked, quiet_run), checked_s = done[0]
    (baseline,), baseline_s = done[1]
    runs = [checked, quiet_run, baseline]
    print_report(runs, args.days, HISTORY)
    print(
        f"wall time {wall:.1f} s: the two pre-check runs side by side {checked_s:.1f} s, the "
        f"baseline {baseline_s:.1f} s, in parallel processes"
    )
    problems = [p for r in runs for p in r.problems]
    for r in (checked, quiet_run):
        if r.calls > baseline.calls or r.tokens > baseline.tokens:
            problems.append(
                f"{r.name}: {r.calls} calls / {r.tokens:,} tokens, more than the baseline's "
                f"{baseline.calls} / {baseline.tokens:,}"
            )
    print(
        "check: rounds only on news, no news skipped, every round done, model_calls = "
        "stand-in requests, pre-check below the baseline:",
        "ok" if not problems else "FAILED",
    )
    for p in problems[:20]:
        print(f"  {p}")
    if problems:
        return 1  # the numbers mean nothing: no summary lines
    for what, ours, every_tick in (
        ("model tokens", checked.tokens, baseline.tokens),
        ("model calls", checked.calls, baseline.calls),
    ):
        emit(
            "discovery",
            f"{what}, {args.days} simulated days",
            ours,
            every_tick,
            unit=what.split()[1],
            better="lower",
            baseline_what="a round every tick",
        )
    return 0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--days", type=int, help="simulated days from a Monday (7)")
    parser.add_argument("--seed", type=int, default=7, help="the trickle's and model's seed (7)")
    parser.add_argument("--quick", action="store_true", help="a smoke check: 2 days")
    args = parser.parse_args()
    args.days = args.days or (2 if args.quick else 7)
    if args.days < 1:
        parser.error("--days must be at least 1")
    return args


if __name__ == "__main__":
    sys.exit(run(parse_args()))
