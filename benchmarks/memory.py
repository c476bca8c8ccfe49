"""Memory benchmark, run by hand: `.venv/bin/python benchmarks/memory.py` (`make bench` runs it
with the defaults; `--quick` is a smoke check of a few seconds).

Two measurements on the embedded defaults: SQLite and tantivy, each in a fresh temp dir.

1. Index maintenance throughput, in records/s organized. `--records` chat messages (2,000,
   seeded short Chinese/English messages) in one group's scope; a memory index made in that
   group (`IndexService.create`); the maintenance worker (`IndexMaintenanceWorker.run_once`)
   driven until the index's coverage reaches the last record. The model is a SCRIPTED
   STAND-IN (`ScriptedProvider`, answering instantly), playing an indexing agent: it reads a
   batch with records_read, writes one entry for the records it was shown with entry_write,
   reads on, and checkpoints (complete=false after `--batches-per-turn` batches, complete=true
   once the range's last record was shown). So the figure is the system's own overhead per
   record (agent loop, tools, database, bookkeeping), not what a real model achieves: a real
   model's seconds per call would dominate it. Afterwards the coverage must be at the last
   record and the entries' refs must name every record exactly once, or the run exits 1.

2. Search latency over `--docs` source messages (100,000 = 10 scopes x 10,000, seeded
   Chinese/English chat text) filtered to one scope. The product path is
   `SearchService(EmbeddedSearchIndex)` fed with `record_document` (the documents the source
   indexer writes, kind `source_message`), in batches of 500 as the indexer commits them,
   queried with `SearchFilters(scopes=[scope])`: jieba tokenizing, the query run in a worker
   thread, hits with normalized scores and excerpts. Beside it, a bare tantivy index built
   here over the same documents in one commit: `text` with tantivy's default tokenizer,
   `scope` a raw term; the query from `Index.parse_query` AND a term query on the scope; the
   top 10 docs fetched. p50/p95 over `--queries` queries (200, interleaved) and the ratio
   product / bare. The bare index does not tokenize like the product: tantivy's default
   tokenizer keeps a run of Chinese characters as one token, so it finds far fewer Chinese
   matches and does less work. It is a lower bound, not the same search. A third row queries
   a field of the same bare index that holds the product's own jieba tokens (the same
   matching as the product, without its wrapping), to show what the wrapping costs.

The defaults take about 20 s on a 2-core machine, mostly building the 100,000-document
indexes. No targets: the numbers are for comparing runs. The exit status is 1 only when a result is
wrong (coverage short, a record lost or doubled, a hit from another scope).
"""

from __future__ import annotations

import argparse
import asyncio
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
from sqlalchemy import func, select

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
from bot.sources.index import record_document
from storage.db import Database, create_database
from storage.migrate import migrate
from storage.models import IndexEntry, MemoryIndex, SourceRecord
from storage.repos import conversations, sources
from storage.repos.sources import NewRecord
from storage.search import SearchDocument, SearchFilters
from storage.search.embedded import EmbeddedSearchIndex
from storage.search.tokenizer import configure_tokenizer, tokenize, tokenize_query, warm_up
from storage.types import utcnow
from storage.urls import normalize_database_url

OWNER = "ou_bench_owner"
TEAM_CHAT = "oc_bench_team"
TEAM_TITLE = "平台组 platform team"
CRITERIA = "decisions made: what was decided, by whom, when, and why"
UPSERT_BATCH = 500  # the source indexer's batch (bot/sources/index.py)
WARM_UP_QUERIES = 20

PEOPLE = ["张伟", "王芳", "李娜", "刘洋", "陈静", "杨帆", "小马", "Alice", "Bob", "Carol"]
AUTHORS = [f"ou_member_{n}" for n in range(12)]
TOPICS = ["部署", "重连", "数据库迁移", "权限申请", "周报", "报销", "机器人回调", "缓存雪崩",
          "飞书审批", "灰度发布", "日志采集", "性能优化", "预算", "招聘"]  # fmt: skip
ERRORS = ["ERR_CONN_RESET", "ECONNREFUSED", "HTTP 502", "OOMKilled", "TimeoutError",
          "SQLSTATE 40001"]  # fmt: skip
PATHS = ["src/server/ws.ts", "bot/channels/feishu.py", "deploy/k8s/values.yaml",
         "web/app/page.tsx"]  # fmt: skip
FUNCS = ["getUserName", "sendMessageCard", "refreshTenantToken", "handleEventCallback"]
TEMPLATES = [
    "{person}说{topic}又出问题了，日志里是 {err}，在 {path} 第{n}行",
    "明天下午{h}点开会讨论{topic}，记得带上上周的数据",
    "Deploy to staging failed: {err} in {path}, rolling back",
    "我把 {func} 改成异步了，麻烦 review 一下 PR #{n}",
    "决定了：{topic}下周{day}上线，{person}负责",
    "监控显示过去一小时大量重连，{err}，怀疑是 {func} 超时",
    "The {topic} latency went up to {n}ms after yesterday's release",
    "{person}: 好的，我看一下 {path}，今天之内给你答复",
    "帮我记一下：{topic}需要在月底前完成，负责人是{person}",
    "Can you check why {func} returns null for tenant {n}?",
    "线上报警 {err}，已经自动扩容到 {h} 个副本",
    "We agreed to freeze the budget for {topic} until Q{q}, {person} will confirm",
    "周{day}的周报：完成了{topic}，下周继续跟进性能问题",
    "ok",
    "收到 👍",
]
# Words the corpus holds: Chinese words inside Chinese sentences, English words, identifiers,
# names, and two-word mixes; and one it lacks ("发票"), as some searches find nothing.
QUERY_POOL = [
    "重连", "部署", "数据库迁移", "周报", "报销", "预算", "灰度发布", "超时", "扩容", "答复",
    "发票", "性能优化", "飞书审批", "张伟", "李娜", "小马", "负责人", "上线",
    "staging", "latency", "review", "budget", "release", "rolling back", "tenant", "Alice",
    "getUserName", "sendMessageCard", "ERR_CONN_RESET", "OOMKilled", "ws.ts", "values.yaml",
    "部署 staging", "Alice 周报", "latency 重连", "budget 预算", "张伟 review",
]  # fmt: skip


def message_text(rnd: random.Random) -> str:
    parts = [_fill(rnd.choice(TEMPLATES), rnd) for _ in range(rnd.choice((1, 1, 1, 2)))]
    return "。".join(parts)


def _fill(template: str, rnd: random.Random) -> str:
    return template.format(
        person=rnd.choice(PEOPLE),
        topic=rnd.choice(TOPICS),
        err=rnd.choice(ERRORS),
        path=rnd.choice(PATHS),
        func=rnd.choice(FUNCS),
        n=rnd.randint(1, 500),
        h=rnd.randint(1, 9),
        q=rnd.randint(1, 4),
        day=rnd.choice("一二三四五"),
    )


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
    db = await sqlite_database(workdir)
    try:
        return await _maintenance(db, records, batches_per_turn)
    finally:
        await db.dispose()


async def _maintenance(db: Database, count: int, batches_per_turn: int) -> MaintenanceResult:
    rows = chat_records(TEAM_CHAT, TEAM_TITLE, count, random.Random(14))
    scope = rows[0].scope
    now = utcnow()
    async with db.write() as s:
        await sources.ensure(
            s, name=rows[0].source, kind="feishu", scope=scope, title=TEAM_TITLE, now=now
        )
        seqs = []
        for n in range(0, len(rows), UPSERT_BATCH):
            new = await sources.insert_records(s, rows[n : n + UPSERT_BATCH], now)
            seqs += [seq for seq, _, _ in new]
        group = await conversations.get_or_create(
            s, platform="feishu", chat_id=TEAM_CHAT, chat_type="group", name=TEAM_TITLE
        )
    last_seq = max(seqs)
    service = IndexService(db, Notifier(), OWNER)
    team = Visibility(everything=False, conversation_id=group.id, scopes=frozenset({scope}))
    index = await service.create("decisions", CRITERIA, team, created_by=OWNER, interval=3600)

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
            row = await s.get(MemoryIndex, index.id)
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
        row = await s.get(MemoryIndex, index.id)
        entries = (await s.scalars(select(IndexEntry).where(IndexEntry.index_id == index.id))).all()
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
        f"  prompt sizes the turns built (the stand-in's estimate, chars/4): "
        f"{r.input_tokens:,} tokens in, {r.output_tokens:,} out, "
        f"{r.input_tokens / r.records:,.0f} in per record"
    )
    print(f"  idle cycle (nothing new): {r.idle_ms:.1f} ms, {r.idle_model_calls} model calls")
    print(
        "check: coverage at the last record, every record in exactly one entry:",
        "ok" if not r.problems else "FAILED: " + "; ".join(r.problems),
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


class BareIndex:
    """tantivy as it comes: default tokenizer on the text, the scope a raw term, one commit.
    A second text field holds the product's jieba tokens (whitespace tokenizer) so the same
    matching can be timed without the product's wrapping."""

    def __init__(self, path: Path, docs: Sequence[SearchDocument]) -> None:
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("id", stored=True, tokenizer_name="raw", index_option="basic")
        builder.add_text_field("scope", tokenizer_name="raw", index_option="basic")
        builder.add_text_field("text", stored=True)  # the default tokenizer
        builder.add_text_field("jieba", tokenizer_name="whitespace", index_option="freq")
        self.schema = builder.build()
        path.mkdir(parents=True, exist_ok=True)
        self.index = tantivy.Index(self.schema, path=str(path))
        writer = self.index.writer(heap_size=200_000_000, num_threads=1)
        for doc in docs:
            writer.add_document(
                tantivy.Document(
                    id=doc.id,
                    scope=doc.scope or "",
                    text=f"{doc.title}\n{doc.text}",
                    jieba=" ".join(tokenize(doc.title) + tokenize(doc.text)),
                )
            )
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()

    def default(self, query: str, scope: str) -> list[tuple[str, str]]:
        return self._run(self._default_query(query, scope))

    def jieba(self, query: str, scope: str) -> list[tuple[str, str]]:
        return self._run(self._jieba_query(query, scope))

    def matches(self, query: str, scope: str) -> tuple[int, int]:
        """How many documents of the scope each bare query matches (untimed)."""
        searcher = self.index.searcher()
        return (
            int(getattr(searcher.search(self._default_query(query, scope), 1), "count", 0)),
            int(getattr(searcher.search(self._jieba_query(query, scope), 1), "count", 0)),
        )

    def _default_query(self, query: str, scope: str) -> tantivy.Query:
        return self._in_scope(self.index.parse_query(query, ["text"]), scope)

    def _jieba_query(self, query: str, scope: str) -> tantivy.Query:
        Q = tantivy.Query
        text = Q.boolean_query(
            [(tantivy.Occur.Should, Q.term_query(self.schema, "jieba", t))
             for t in tokenize_query(query)]
        )  # fmt: skip
        return self._in_scope(text, scope)

    def _in_scope(self, text: tantivy.Query, scope: str) -> tantivy.Query:
        return tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Must, text),
                (tantivy.Occur.Must, tantivy.Query.term_query(self.schema, "scope", scope)),
            ]
        )

    def _run(self, query: tantivy.Query) -> list[tuple[str, str]]:
        searcher = self.index.searcher()
        out = []
        for _score, address in searcher.search(query, 10).hits:
            doc = searcher.doc(address)
            out.append((str(doc.get_first("id")), str(doc.get_first("text"))))
        return out

    def segments(self) -> int:
        return int(self.index.searcher().num_segments)


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
        return bare.default(query, scope)

    async def bare_jieba(query: str, scope: str) -> list[tuple[str, str]]:
        return bare.jieba(query, scope)

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
    matched = [bare.matches(query, scope) for query, scope in plan]
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


# ---- main ------------------------------------------------------------------------------------


async def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    ok = True
    with tempfile.TemporaryDirectory(prefix="maka-memory-bench-") as tmp:
        workdir = Path(tmp)
        if args.part in ("all", "maintenance"):
            print(f"  index maintenance over {args.records:,} records...", file=sys.stderr)
            m = await bench_maintenance(workdir / "maintenance", args.records, args.batches)
            print_maintenance(m, args.batches)
            ok &= not m.problems
        if args.part in ("all", "search"):
            configure_tokenizer(workdir / "jieba")
            warm_up()
            print(f"  search over {args.docs:,} documents...", file=sys.stderr)
            s = await bench_search(workdir / "search", args.docs, args.scopes, args.queries)
            print_search(s)
            ok &= not s.problems
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
