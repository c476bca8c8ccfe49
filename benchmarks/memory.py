"""Memory benchmark, run by hand: `.venv/bin/python benchmarks/memory.py` (`make bench` runs it
with the defaults; `--quick` is a smoke check of a few seconds).

Two measurements on the embedded defaults: SQLite and tantivy, each in a fresh temp dir.

1. Index maintenance throughput, in records/s organized. `--records` chat messages (2,000,
   seeded short Chinese/English messages) in one group's scope; a memory index made in that
   group (`IndexService.create`); the maintenance worker (`IndexMaintenanceWorker.run_once`)
   driven until the index's coverage reaches the last record. The model is a SCRIPTED
   STAND-IN (`ScriptedProvider`, answering instantly), playing an indexing agent: it reads a
   batch with records_read, writes one entry for the records it was shown with entry_write,
   reads on, and checkpoints (complete=false after `--batches` batches, complete=true once
   the range's last record was shown). So the figure is the system's own overhead per record
   (agent loop, tools, database, bookkeeping), not what a real model achieves: a real model's
   seconds per call would dominate it. Afterwards the coverage must be at the last record and
   the entries' refs must name every record exactly once, or the run exits 1.
   The baseline, in a second fresh database with the same records: the same organizing as
   plain statements, with no agent, tools, turn or worker (per batch of 20, a read of the
   next records of the scope and one entry written with their refs, each in its own
   transaction; the coverage updated every `--batches` batches). The least database work for
   the same result, so the ratio product / plain statements is what the machinery costs.

2. Search latency over `--docs` source messages (100,000 = 10 scopes x 10,000, seeded
   Chinese/English chat text, benchmarks/_corpus.py) filtered to one scope. The product path
   is `SearchService(EmbeddedSearchIndex)` fed with `record_document` (the documents the
   source indexer writes, kind `source_message`), in batches of 500 as the indexer commits
   them, queried with `SearchFilters(scopes=[scope])`: jieba tokenizing, the query run in a
   worker thread, hits with normalized scores and excerpts. Beside it, a bare tantivy index
   over the same documents in one commit (benchmarks/_bare_tantivy.py, shared with
   search.py): `text` with tantivy's default tokenizer, `scope` a raw term; the query from
   `Index.parse_query` AND a term query on the scope; the top 10 docs fetched. p50/p95 over
   `--queries` queries (200, interleaved) and the ratio product / bare. The bare index does
   not tokenize like the product: tantivy's default tokenizer keeps a run of Chinese
   characters as one token, so it finds far fewer Chinese matches and does less work. It is
   a lower bound, not the same search. A third row queries a field of the same bare index
   that holds the product's own jieba tokens (the same matching as the product, without its
   wrapping), to show what the wrapping costs.

The defaults take about 20 s on a 2-core machine, mostly building the 100,000-document
indexes. No targets: the numbers are for comparing runs. At the end one summary line per
headline figure (benchmarks/_summary.py). The exit status is 1 only when a result is wrong
(coverage short, a record lost or doubled, a hit from another scope).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import tantivy
from _bare_tantivy import BareIndex
from _corpus import QUERY_POOL, message_text
from _summary import emit
from sqlalchemy import func, select, update

from bot.assistant.visibility import Visibility
from bot.host.notify import Notifier
from bot.llm.client import MemoryRecorder, ModelClient
from bot.llm.scripted import PlannedReply, ScriptedProvider
from bot.llm.types import Completion, Message, ToolSpec
from bot.memory.indexes.maintenance import IndexMaintenanceWorker
from bot.memory.indexes.service import IndexService
from bot.memory.indexes.tools import BATCH_RECORDS, indexer_tools
from bot.memory.indexes.turn import CHECKPOINT_NOW, IndexerTurn
from bot.memory.search import SearchService
from bot.memory.source_index import record_document
from storage.db import Database, create_database
from storage.migrate import migrate
from storage.models import IndexEntry, MemoryIndex, SourceRecord
from storage.repos import conversations, source_records, sources
from storage.repos.source_records import NewRecord
from storage.search import SearchDocument, SearchFilters
from storage.search.embedded import EmbeddedSearchIndex
from storage.search.tokenizer import configure_tokenizer, warm_up
from storage.types import utcnow
from storage.urls import normalize_database_url

OWNER = "ou_bench_owner"
TEAM_CHAT = "oc_bench_team"
TEAM_TITLE = "平台组 platform team"
CRITERIA = "decisions made: what was decided, by whom, when, and why"
UPSERT_BATCH = 500  # the source indexer's batch (bot/memory/source_index.py)
WARM_UP_QUERIES = 20

AUTHORS = [f"ou_member_{n}" for n in range(12)]


def chat_records(chat_id: str, title: str, count: int, rnd: random.Random) -> list[NewRecord]:
    start = datetime(2025, 3, 1, 9, tzinfo=UTC)
    return [
        NewRecord(
            source=f"feishu:{chat_id}",
            external_id=f"om_{chat_id}_{i:06d}",
            scope=f"group:{chat_id}",
            text=message_text(rnd),
            sent_at=start + timedelta(seconds=37 * i),
            author=rnd.choice(AUTHORS),
            title=title,
        )
        for i in range(count)
    ]


def percentile(sorted_values: Sequence[float], share: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * share))]


# ---- 1. index maintenance with a scripted indexing agent -------------------------------------

REF_LINE = re.compile(r"^\[rec-(\d+)\]", re.MULTILINE)
LAST_OF_RANGE = "That was the last of this range."
NOTHING_LEFT = "nothing left"
send = ScriptedProvider.tool_call


class IndexingAgent:
    """A scripted indexing agent that decides each reply from the turn's messages: read a
    batch, write one entry for the records shown, read on; checkpoint complete=true once the
    range's last record was shown, complete=false after `batches_per_turn` batches. A tool
    error means the system refused something this agent does right: the run stops there."""

    def __init__(self, batches_per_turn: int) -> None:
        self.batches_per_turn = batches_per_turn

    def __call__(self, messages: list[Message], _tools: list[ToolSpec]) -> PlannedReply:
        last = messages[-1]
        content = last.content or ""
        if last.role == "user":
            if CHECKPOINT_NOW in content:  # the turn ran out of steps: not this agent's plan
                return send("checkpoint", {"complete": False, "note": "step limit"})
            return send("records_read", {})
        if "\nerror: " in content:
            raise RuntimeError(f"the indexing tools refused a call: {content[:300]}")
        if last.name == "records_read":
            refs = REF_LINE.findall(content)
            if not refs:  # "nothing left in this range"
                return send("checkpoint", {"complete": True})
            return send(
                "entry_write",
                {
                    "key": f"decisions rec-{refs[0]}..rec-{refs[-1]}",
                    "text": f"{len(refs)} messages: who decided what about the rollout "
                    "(scripted summary)",
                    "refs": [f"rec-{r}" for r in refs],
                    "expected_revision": 0,
                },
            )
        if last.name == "entry_write":
            reads = [m.content or "" for m in messages if m.name == "records_read"]
            if LAST_OF_RANGE in reads[-1] or NOTHING_LEFT in reads[-1]:
                return send("checkpoint", {"complete": True})
            if len(reads) >= self.batches_per_turn:
                return send("checkpoint", {"complete": False, "note": "more next turn"})
            return send("records_read", {})
        raise RuntimeError(f"unexpected message for the indexing agent: {last}")


class EndlessScript(ScriptedProvider):
    """A `ScriptedProvider` that never runs out of the agent's steps, and times itself so the
    stand-in's own share of the wall time can be told apart."""

    def __init__(self, agent: IndexingAgent) -> None:
        super().__init__(name="scripted-indexer")
        self.agent = agent
        self.seconds = 0.0

    async def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> Completion:
        if self.remaining == 0:
            self.add(*[self.agent] * 64)
        started = time.perf_counter()
        try:
            return await super().complete(
                messages, tools, max_tokens=max_tokens, temperature=temperature
            )
        finally:
            self.seconds += time.perf_counter() - started


@dataclass(frozen=True)
class MaintenanceResult:
    records: int
    wall: float
    cycles: int
    model_calls: int
    model_seconds: float
    input_tokens: int
    output_tokens: int
    entries: int
    idle_ms: float
    idle_model_calls: int
    problems: list[str]
    bare: BareMaintenance

    @property
    def rate(self) -> float:
        return self.records / self.wall if self.wall else 0.0


@dataclass(frozen=True)
class BareMaintenance:
    """The baseline: the same records read and entries written with plain statements."""

    records: int
    wall: float
    entries: int
    problems: list[str]

    @property
    def rate(self) -> float:
        return self.records / self.wall if self.wall else 0.0


async def sqlite_database(workdir: Path) -> Database:
    db = create_database(normalize_database_url(f"sqlite:///{workdir / 'maka.db'}"))
    await migrate(db)
    return db


async def bench_maintenance(
    workdir: Path, records: int, batches_per_turn: int
) -> MaintenanceResult:
    db = await sqlite_database(workdir / "product")
    try:
        result = await _maintenance(db, records, batches_per_turn)
    finally:
        await db.dispose()
    db = await sqlite_database(workdir / "bare")
    try:
        bare = await _bare_maintenance(db, records, batches_per_turn)
    finally:
        await db.dispose()
    return dataclasses.replace(result, bare=bare)


@dataclass(frozen=True)
class Seeded:
    scope: str
    last_seq: int
    index_id: int
    group_id: int


async def seed(db: Database, count: int) -> Seeded:
    """The chat records (seeded: the same in both runs) and the group's memory index."""
    rows = chat_records(TEAM_CHAT, TEAM_TITLE, count, random.Random(14))
    scope = rows[0].scope
    now = utcnow()
    async with db.write() as s:
        await sources.ensure(
            s, name=rows[0].source, kind="feishu", scope=scope, title=TEAM_TITLE, now=now
        )
        seqs = []
        for n in range(0, len(rows), UPSERT_BATCH):
            new = await source_records.insert_records(s, rows[n : n + UPSERT_BATCH], now)
            seqs += [seq for seq, _, _ in new]
        group = await conversations.get_or_create(
            s, platform="feishu", chat_id=TEAM_CHAT, chat_type="group", name=TEAM_TITLE
        )
    service = IndexService(db, Notifier(), OWNER)
    team = Visibility(everything=False, conversation_id=group.id, scopes=frozenset({scope}))
    index = await service.create("decisions", CRITERIA, team, created_by=OWNER, interval=3600)
    return Seeded(scope, max(seqs), index.id, group.id)


async def _maintenance(db: Database, count: int, batches_per_turn: int) -> MaintenanceResult:
    seeded = await seed(db, count)
    scope, last_seq = seeded.scope, seeded.last_seq
    service = IndexService(db, Notifier(), OWNER)
    index_id = seeded.index_id

    provider = EndlessScript(IndexingAgent(batches_per_turn))
    recorder = MemoryRecorder()
    turn = IndexerTurn(ModelClient(provider, recorder), indexer_tools(), timeout=600)
    worker = IndexMaintenanceWorker(db, service, turn, owner="bench", tz=UTC)

    problems: list[str] = []
    wall, cycles = 0.0, 0
    while True:
        started = time.perf_counter()
        claimed = await worker.run_once()
        wall += time.perf_counter() - started
        cycles += 1
        async with db.read() as s:
            row = await s.get(MemoryIndex, index_id)
        assert row is not None
        if not claimed or row.status == "maintenance_failed" or cycles > count:
            problems.append(f"stopped at cycle {cycles}: {row.status} {row.last_error or ''}")
            break
        if row.covered_cursor >= last_seq:
            break

    calls = len(recorder.calls)
    started = time.perf_counter()
    await worker.run_once()  # due right after a completed range: a check that finds nothing
    idle_ms = (time.perf_counter() - started) * 1000
    idle_calls = len(recorder.calls) - calls

    async with db.read() as s:
        row = await s.get(MemoryIndex, index_id)
        entries = (await s.scalars(select(IndexEntry).where(IndexEntry.index_id == index_id))).all()
        in_scope = list(
            (await s.scalars(select(SourceRecord.id).where(SourceRecord.scope == scope))).all()
        )
        total = int(await s.scalar(select(func.count(SourceRecord.id))) or 0)
    assert row is not None
    if row.covered_cursor != last_seq:
        problems.append(f"coverage at rec-{row.covered_cursor}, not the last rec-{last_seq}")
    if row.status != "no_changes_at_last_check" or idle_calls:
        problems.append(f"idle cycle: status {row.status}, {idle_calls} model calls")
    refs = sorted(r for e in entries for r in e.refs)
    if refs != sorted(in_scope) or total != count:
        problems.append(
            f"entries refer to {len(refs)} records ({len(set(refs))} distinct) "
            f"of {len(in_scope)} in the scope"
        )
    return MaintenanceResult(
        records=count,
        wall=wall,
        cycles=cycles,
        model_calls=calls,
        model_seconds=provider.seconds,
        input_tokens=sum(c.input_tokens for c in recorder.calls),
        output_tokens=sum(c.output_tokens for c in recorder.calls),
        entries=len(entries),
        idle_ms=idle_ms,
        idle_model_calls=idle_calls,
        problems=problems,
        bare=BareMaintenance(0, 0.0, 0, []),
    )


async def _bare_maintenance(db: Database, count: int, batches_per_turn: int) -> BareMaintenance:
    """The least database work that organizes the records the same way, as plain statements
    in the same kind of transactions, with no agent, tools, turn or worker: per batch of
    BATCH_RECORDS, a read of the next records of the scope (rendered as lines, as a model
    would be shown them) and a write of one entry with their refs; the coverage updated every
    `batches_per_turn` batches and at the end."""
    seeded = await seed(db, count)
    started = time.perf_counter()
    cursor, batches, entries = 0, 0, 0
    while True:
        async with db.read() as s:
            batch = (
                await s.scalars(
                    select(SourceRecord)
                    .where(SourceRecord.scope == seeded.scope, SourceRecord.id > cursor)
                    .order_by(SourceRecord.id)
                    .limit(BATCH_RECORDS)
                )
            ).all()
            shown = "\n".join(f"[rec-{r.id}] {r.sent_at} {r.author}: {r.text}" for r in batch)
        if not batch:
            break
        refs = [r.id for r in batch]
        async with db.write() as s:
            s.add(
                IndexEntry(
                    index_id=seeded.index_id,
                    key=f"decisions rec-{refs[0]}..rec-{refs[-1]}",
                    text=f"{len(refs)} messages, {len(shown)} chars (bare baseline)",
                    refs=refs,
                    revision=1,
                    updated_at=utcnow(),
                )
            )
        entries += 1
        cursor, batches = refs[-1], batches + 1
        if batches % batches_per_turn == 0:
            await _cover(db, seeded.index_id, cursor)
    await _cover(db, seeded.index_id, cursor)
    wall = time.perf_counter() - started
    problems = []
    async with db.read() as s:
        rows = (
            await s.scalars(select(IndexEntry).where(IndexEntry.index_id == seeded.index_id))
        ).all()
    refs = sorted(r for e in rows for r in e.refs)
    if cursor != seeded.last_seq or len(refs) != count or len(set(refs)) != count:
        problems.append(f"bare baseline: coverage at rec-{cursor}, {len(refs)} refs")
    return BareMaintenance(count, wall, entries, problems)


async def _cover(db: Database, index_id: int, cursor: int) -> None:
    async with db.write() as s:
        await s.execute(
            update(MemoryIndex)
            .where(MemoryIndex.id == index_id)
            .values(covered_cursor=cursor, updated_at=utcnow())
        )


def print_maintenance(r: MaintenanceResult, batches_per_turn: int) -> None:
    print(
        f"\nindex maintenance, SQLite in a temp dir: {r.records:,} chat records in one scope, "
        f"records_read batches of {BATCH_RECORDS}, a checkpoint every {batches_per_turn} "
        "batches"
    )
    print(
        "model: a SCRIPTED STAND-IN (ScriptedProvider, answers instantly), so this is the "
        "system's overhead per record, not a real model's throughput"
    )
    print(
        f"organized {r.records:,} records in {r.wall:.2f} s: {r.rate:,.0f} records/s "
        f"({r.wall / r.records * 1000:.2f} ms/record)"
    )
    print(
        f"  {r.cycles} maintenance cycles, {r.model_calls} model calls "
        f"({r.model_seconds:.2f} s of the wall inside the scripted stand-in), "
        f"{r.entries} entries written"
    )
    print(
        f"  prompt sizes the turns built (the stand-in's estimate, bot/llm/tokens.py): "
        f"{r.input_tokens:,} tokens in, {r.output_tokens:,} out, "
        f"{r.input_tokens / r.records:,.0f} in per record"
    )
    print(f"  idle cycle (nothing new): {r.idle_ms:.1f} ms, {r.idle_model_calls} model calls")
    b = r.bare
    print(
        f"baseline, plain statements (no agent, tools, turn or worker; a read and an entry "
        f"write per batch of {BATCH_RECORDS}, coverage every {batches_per_turn} batches): "
        f"{b.records:,} records in {b.wall:.2f} s: {b.rate:,.0f} records/s, {b.entries} entries"
    )
    print(f"ratio product / plain statements: {r.rate / b.rate:.2f}" if b.rate else "")
    problems = r.problems + b.problems
    print(
        "check: coverage at the last record, every record in exactly one entry:",
        "ok" if not problems else "FAILED: " + "; ".join(problems),
    )


def summarize_maintenance(r: MaintenanceResult) -> None:
    emit(
        "memory",
        "index maintenance, scripted model",
        r.rate,
        r.bare.rate,
        unit="records/s",
        better="higher",
        baseline_what="plain SQL reads + entry writes",
    )


# ---- 2. search latency filtered to one scope, beside a bare tantivy query --------------------


@dataclass(frozen=True)
class PathTimings:
    name: str
    seconds: list[float]
    hits: list[int]

    @property
    def p50_ms(self) -> float:
        return statistics.median(self.seconds) * 1000

    @property
    def p95_ms(self) -> float:
        return percentile(sorted(self.seconds), 0.95) * 1000


@dataclass(frozen=True)
class SearchResult:
    docs: int
    scopes: int
    queries: int
    build_s: float
    segments: tuple[int, int]  # product, bare
    paths: list[PathTimings]
    matched: list[tuple[int, int]]  # per query: bare default, bare jieba tokens
    problems: list[str]


def make_documents(docs: int, scopes: int) -> list[SearchDocument]:
    rnd = random.Random(100)
    per_scope = docs // scopes
    out = []
    for n in range(scopes):
        chat = f"oc_bench_{n:02d}"
        for record in chat_records(chat, f"项目群 {n}", per_scope, rnd):
            out.append(record_document(record, None))
    return out


async def bench_search(workdir: Path, docs: int, scopes: int, queries: int) -> SearchResult:
    documents = make_documents(docs, scopes)
    service = SearchService(EmbeddedSearchIndex(workdir / "product"))
    started = time.perf_counter()
    for n in range(0, len(documents), UPSERT_BATCH):
        if not await service.upsert(documents[n : n + UPSERT_BATCH]):
            raise RuntimeError("the product index refused a batch (see the log)")
    build = time.perf_counter() - started
    print(f"  product index: {len(documents):,} documents in {build:.1f} s", file=sys.stderr)
    bare = await asyncio.to_thread(BareIndex, workdir / "bare", documents)
    print("  bare index built", file=sys.stderr)
    product_segments = int(tantivy.Index.open(str(workdir / "product")).searcher().num_segments)

    rnd = random.Random(7)
    all_scopes = sorted({d.scope for d in documents if d.scope})
    plan = [(rnd.choice(QUERY_POOL), rnd.choice(all_scopes)) for _ in range(queries)]
    problems: list[str] = []

    async def product(query: str, scope: str) -> list[tuple[str, str]]:
        hits = await service.search(query, SearchFilters(scopes=[scope]), 10)
        for hit in hits:
            if hit.scope != scope:
                problems.append(f"{query!r} in {scope}: a hit from {hit.scope}")
        return [(hit.id, hit.excerpts[0] if hit.excerpts else "") for hit in hits]

    async def bare_default(query: str, scope: str) -> list[tuple[str, str]]:
        return bare.default(query, {"scope": [scope]})

    async def bare_jieba(query: str, scope: str) -> list[tuple[str, str]]:
        return bare.jieba(query, {"scope": [scope]})

    paths: list[tuple[str, Callable[[str, str], Awaitable[list[tuple[str, str]]]]]] = [
        ("product: SearchService(EmbeddedSearchIndex)", product),
        ("bare tantivy, default tokenizer", bare_default),
        ("bare tantivy, the product's jieba tokens", bare_jieba),
    ]
    timings = [PathTimings(name, [], []) for name, _ in paths]
    for n, (query, scope) in enumerate(plan[:WARM_UP_QUERIES] + plan):
        for (_, run), out in zip(paths, timings, strict=True):
            started = time.perf_counter()
            found = await run(query, scope)
            elapsed = time.perf_counter() - started
            if n >= WARM_UP_QUERIES:
                out.seconds.append(elapsed)
                out.hits.append(len(found))
    await service.close()
    matched = [bare.matches(query, {"scope": [scope]}) for query, scope in plan]
    if sum(timings[0].hits) == 0:
        problems.append("the product path found nothing for any query")
    return SearchResult(
        docs=len(documents),
        scopes=scopes,
        queries=queries,
        build_s=build,
        segments=(product_segments, bare.segments()),
        paths=timings,
        matched=matched,
        problems=problems,
    )


def print_search(r: SearchResult) -> None:
    print(
        f"\nsearch, embedded tantivy in a temp dir: {r.docs:,} source messages "
        f"({r.scopes} scopes x {r.docs // r.scopes:,}), each query filtered to one scope, "
        f"{r.queries} queries (+{WARM_UP_QUERIES} warm-up), top 10"
    )
    print(
        f"product index built in {r.build_s:.1f} s ({r.docs / r.build_s:,.0f} docs/s, jieba "
        f"tokenizing included, commits of {UPSERT_BATCH}); segments: product "
        f"{r.segments[0]}, bare {r.segments[1]}"
    )
    print(f"{'path':<46} {'p50 ms':>8} {'p95 ms':>8} {'hits/query':>11} {'no hit':>7}")
    for p in r.paths:
        empty = sum(1 for h in p.hits if h == 0)
        print(
            f"{p.name:<46} {p.p50_ms:>8.3f} {p.p95_ms:>8.3f} "
            f"{statistics.mean(p.hits):>11.1f} {empty:>7}"
        )
    product, bare, same_tokens = r.paths
    default_matches = statistics.mean(m[0] for m in r.matched)
    jieba_matches = statistics.mean(m[1] for m in r.matched)
    print(
        f"documents a query matches in its scope, mean: {jieba_matches:,.0f} with jieba tokens "
        f"(the product's matching), {default_matches:,.0f} with tantivy's default tokenizer"
    )
    print(
        f"ratio product / bare tantivy (default tokenizer): "
        f"p50 {product.p50_ms / bare.p50_ms:.1f}x, p95 {product.p95_ms / bare.p95_ms:.1f}x"
    )
    print(
        f"ratio product / bare tantivy (the product's jieba tokens): "
        f"p50 {product.p50_ms / same_tokens.p50_ms:.1f}x, "
        f"p95 {product.p95_ms / same_tokens.p95_ms:.1f}x"
    )
    print(
        "note: the product tokenizes with jieba (storage/search/tokenizer.py); the bare index "
        "uses tantivy's default tokenizer, which keeps a run of Chinese characters as one "
        "token, so it matches far less Chinese and does less work: a lower bound, not the "
        "same search. The product also pays a worker-thread hop, the filter clause, score "
        "normalization, payload decoding and excerpts; the bare paths run on the loop thread."
    )
    print(
        "check: every product hit in the filtered scope:",
        "ok" if not r.problems else "FAILED: " + "; ".join(r.problems[:3]),
    )


def summarize_search(r: SearchResult) -> None:
    product, bare, same_tokens = r.paths
    for what, baseline, baseline_what in (
        ("p50", bare, "bare tantivy query, default tokenizer"),
        ("p50 (same tokens)", same_tokens, "bare tantivy query, jieba tokens"),
    ):
        emit(
            "memory",
            f"search {what}, {r.docs // 1000}k docs, 1 scope",
            product.p50_ms,
            baseline.p50_ms,
            unit="ms",
            better="lower",
            baseline_what=baseline_what,
        )


# ---- main ------------------------------------------------------------------------------------


async def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    ok = True
    summaries: list[Callable[[], None]] = []
    with tempfile.TemporaryDirectory(prefix="maka-memory-bench-") as tmp:
        workdir = Path(tmp)
        if args.part in ("all", "maintenance"):
            print(f"  index maintenance over {args.records:,} records...", file=sys.stderr)
            m = await bench_maintenance(workdir / "maintenance", args.records, args.batches)
            print_maintenance(m, args.batches)
            summaries.append(lambda: summarize_maintenance(m))
            ok &= not m.problems and not m.bare.problems
        if args.part in ("all", "search"):
            configure_tokenizer(workdir / "jieba")
            warm_up()
            print(f"  search over {args.docs:,} documents...", file=sys.stderr)
            s = await bench_search(workdir / "search", args.docs, args.scopes, args.queries)
            print_search(s)
            summaries.append(lambda: summarize_search(s))
            ok &= not s.problems
    print()
    for summarize in summaries:
        summarize()
    return 0 if ok else 1


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--records", type=int, help="chat records to organize (2,000)")
    parser.add_argument("--docs", type=int, help="search documents (100,000)")
    parser.add_argument("--scopes", type=int, default=10, help="scopes the docs spread over (10)")
    parser.add_argument("--queries", type=int, help="timed search queries (200)")
    parser.add_argument(
        "--batches", type=int, default=10, help="records_read batches per indexing turn (10)"
    )
    parser.add_argument("--part", choices=["all", "maintenance", "search"], default="all")
    parser.add_argument(
        "--quick", action="store_true", help="small sizes, a smoke check: 200 records, 10,000 docs"
    )
    args = parser.parse_args()
    quick = args.quick
    args.records = args.records or (200 if quick else 2000)
    args.docs = args.docs or (10_000 if quick else 100_000)
    args.queries = args.queries or (50 if quick else 200)
    if not 1 <= args.batches <= 11:  # two steps a batch within IndexerTurn's 24
        parser.error("--batches must be 1..11")
    if args.records < 1 or args.docs < args.scopes or args.scopes < 1 or args.queries < 1:
        parser.error("sizes must be positive, with at least one document per scope")
    return args


if __name__ == "__main__":
    sys.exit(asyncio.run(run(parse_args())))
