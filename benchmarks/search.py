"""Embedded search benchmark, run by hand: `.venv/bin/python benchmarks/search.py` (`make bench`
runs it with the defaults; `--quick` times 100 queries a size instead of 300).

For 32 Sessions x 60 messages and 320 x 60, indexes seeded mixed Chinese/English chat text
(benchmarks/_corpus.py) as Session log messages and times queries filtered to 32 Session ids,
the shape of WorkHub's candidate search, beside a bare tantivy query over the same documents
in the same run (benchmarks/_bare_tantivy.py). Also reports the build time and the
tokenizer's throughput.

The documents are the production ones: `bot.memory.session_index.event_document` of
(unsaved) `Session` / `SessionEvent` rows, user and assistant messages in turn (kinds
`session_user`, `session_assistant`, the Session's name as title, a dm or group scope),
written to `EmbeddedSearchIndex` in batches of 500 as the session indexer does. Two product
calls are timed:

1. index: `EmbeddedSearchIndex.search(query, SearchFilters(session_ids=32 ids), limit=10)`,
   the search layer itself (jieba query tokens, a worker thread, BM25 normalized, payloads
   decoded, excerpts). `SearchService` only adds a try/except around it. The target is on this
   one: median <= 2 ms at both sizes.
2. evidence: `bot.workhub.evidence.gather_evidence` through `SearchService`, the call WorkHub
   routing makes (BEST_MESSAGE strategy: the 32 ids and the message kinds as filters, up to
   4 hits a candidate, so 128, grouped per Session). No target.

Each beside bare tantivy with the same filters and limit, default tokenizer (tantivy as it
comes: a lower bound, it matches far less Chinese) and with the product's jieba tokens (the
same matching without the product's wrapping); ratios are product / bare. The bare queries
run on the loop thread (no worker-thread hop). The queries are `_corpus.QUERY_POOL`, each
with its own random 32 Session ids (at 32 Sessions: all of them), the paths interleaved query
by query after 20 warm-up queries. At the end one summary line (benchmarks/_summary.py) per
headline figure: the index p50 at each size and the evidence p50 at 320 Sessions, each beside
the bare default-tokenizer query.

Exits 1 when the target is missed or a product hit comes from a Session outside the filter.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from _bare_tantivy import BareIndex
from _corpus import QUERY_POOL, TOPICS, message_text
from _summary import emit

from bot.config import EvidenceStrategy
from bot.memory.search import SearchService
from bot.memory.session_index import event_document
from bot.workhub.evidence import MESSAGE_KINDS, gather_evidence
from storage.models import Session, SessionEvent
from storage.search.base import SearchDocument, SearchFilters
from storage.search.embedded import EmbeddedSearchIndex
from storage.search.tokenizer import clear_caches, configure_tokenizer, tokenize, warm_up

MESSAGES_PER_SESSION = 60
SIZES = (32, 320)
FILTER_SESSIONS = 32
UPSERT_BATCH = 500  # the session indexer's batch (bot/memory/session_index.py)
WARM_UP_QUERIES = 20
TARGET_MEDIAN_MS = 2.0
Search = Callable[[str, list[str]], Awaitable[list[tuple[str, str | None]]]]


@dataclass
class PathTimings:
    name: str
    seconds: list[float] = field(default_factory=list)
    hits: list[int] = field(default_factory=list)

    @property
    def p50_ms(self) -> float:
        return statistics.median(self.seconds) * 1000

    @property
    def p95_ms(self) -> float:
        ordered = sorted(self.seconds)
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] * 1000


@dataclass(frozen=True)
class Result:
    sessions: int
    docs: int
    build_s: float
    paths: list[PathTimings]  # index, bare x2, evidence, bare x2
    problems: list[str]

    def path(self, n: int) -> PathTimings:
        return self.paths[n]


def session_documents(sessions: int, rnd: random.Random) -> list[SearchDocument]:
    """What the session indexer writes for `sessions` Sessions of 60 messages each."""
    start = datetime(2025, 1, 1, tzinfo=UTC)
    docs = []
    for s in range(1, sessions + 1):
        session = Session(id=s, name=f"{rnd.choice(TOPICS)} #{s}")
        scope = f"group:oc_bench_{s % 7}" if s % 3 else f"dm:ou_bench_{s % 11}"
        for m in range(MESSAGES_PER_SESSION):
            event = SessionEvent(
                session_id=s,
                seq=m + 1,
                kind="user" if m % 2 == 0 else "assistant",
                text=message_text(rnd),
                created_at=start + timedelta(minutes=s * MESSAGES_PER_SESSION + m),
            )
            docs.append(event_document(event, session, scope))
    return docs


def session_of(doc_id: str) -> str:
    """The Session id in an `event_document` id (`session:<id>:<seq>`)."""
    return doc_id.split(":")[1]


def tokenizer_throughput(docs: list[SearchDocument]) -> tuple[float, float]:
    """Chars/s tokenizing every message once, starting from empty caches; and the worst case
    where no word or CJK run is ever seen twice across messages (caches cleared each time)."""
    texts = [f"{d.text} #{i}" for i, d in enumerate(docs)]  # unique: no whole-text hits
    chars = sum(map(len, texts))
    clear_caches()
    started = time.perf_counter()
    for text in texts:
        tokenize(text)
    corpus = chars / (time.perf_counter() - started)
    elapsed = 0.0
    for text in texts[:3000]:
        clear_caches()
        t0 = time.perf_counter()
        tokenize(text)
        elapsed += time.perf_counter() - t0
    return corpus, sum(map(len, texts[:3000])) / elapsed


async def run_size(sessions: int, workdir: Path, queries: int) -> Result:
    rnd = random.Random(sessions)
    docs = session_documents(sessions, rnd)
    index = EmbeddedSearchIndex(workdir / f"idx-{sessions}")
    service = SearchService(index)
    clear_caches()  # the build pays for its own tokenizing
    started = time.perf_counter()
    for i in range(0, len(docs), UPSERT_BATCH):
        await index.upsert(docs[i : i + UPSERT_BATCH])
    build = time.perf_counter() - started
    bare = await asyncio.to_thread(BareIndex, workdir / f"bare-{sessions}", docs)

    all_sessions = sorted({d.session_id for d in docs if d.session_id})
    plan = [
        (QUERY_POOL[n % len(QUERY_POOL)], rnd.sample(all_sessions, FILTER_SESSIONS))
        for n in range(queries)
    ]
    evidence_limit = min(200, 4 * FILTER_SESSIONS)  # gather_evidence's, for BEST_MESSAGE
    problems: list[str] = []

    async def product(query: str, allowed: list[str]) -> list[tuple[str, str | None]]:
        hits = await index.search(query, SearchFilters(session_ids=allowed), limit=10)
        outside = [h.session_id for h in hits if h.session_id not in allowed]
        if outside:
            problems.append(f"{query!r}: hits from Sessions {outside[:3]} outside the filter")
        return [(h.id, h.session_id) for h in hits]

    async def evidence(query: str, allowed: list[str]) -> list[tuple[str, str | None]]:
        found, status = await gather_evidence(
            service, query, allowed, EvidenceStrategy.BEST_MESSAGE
        )
        if status != "ok":
            problems.append(f"{query!r}: evidence {status}")
        return [(sid, None) for sid in found]

    def bare_path(jieba: bool, limit: int, kinds: bool) -> Search:
        async def run(query: str, allowed: list[str]) -> list[tuple[str, str | None]]:
            filters = {"session_id": allowed, **({"kind": list(MESSAGE_KINDS)} if kinds else {})}
            found = (bare.jieba if jieba else bare.default)(query, filters, limit)
            if kinds:  # as gather_evidence: the Sessions with a hit
                return [(sid, None) for sid in dict.fromkeys(session_of(d) for d, _ in found)]
            return [(doc_id, None) for doc_id, _ in found]

        return run

    paths: list[tuple[str, Search]] = [
        ("index: EmbeddedSearchIndex.search, top 10", product),
        ("  bare tantivy, default tokenizer, top 10", bare_path(False, 10, False)),
        ("  bare tantivy, jieba tokens, top 10", bare_path(True, 10, False)),
        (f"evidence: gather_evidence, up to {evidence_limit}", evidence),
        (f"  bare, default tokenizer, +kinds, top {evidence_limit}",
         bare_path(False, evidence_limit, True)),
        (f"  bare, jieba tokens, +kinds, top {evidence_limit}",
         bare_path(True, evidence_limit, True)),
    ]  # fmt: skip
    timings = [PathTimings(name) for name, _ in paths]
    for n, (query, allowed) in enumerate(plan[:WARM_UP_QUERIES] + plan):
        for (_, run), out in zip(paths, timings, strict=True):
            t0 = time.perf_counter()
            found = await run(query, allowed)
            elapsed = time.perf_counter() - t0
            if n >= WARM_UP_QUERIES:
                out.seconds.append(elapsed)
                out.hits.append(len(found))
    await index.close()
    if sum(timings[0].hits) == 0:
        problems.append("the product found nothing for any query")
    return Result(sessions, len(docs), build, timings, problems)


def print_size(r: Result) -> None:
    print(
        f"\n{r.sessions} Sessions x {MESSAGES_PER_SESSION} = {r.docs:,} documents: product "
        f"index built in {r.build_s:.2f} s ({r.docs / r.build_s:,.0f} docs/s, jieba "
        f"tokenizing included, commits of {UPSERT_BATCH}); each query filtered to "
        f"{FILTER_SESSIONS} Sessions"
    )
    print(f"{'path':<48} {'p50 ms':>8} {'p95 ms':>8} {'found/query':>11} {'p50 ratio':>10}")
    for n, p in enumerate(r.paths):
        head = r.paths[0 if n < 3 else 3]
        ratio = "" if p is head else f"{head.p50_ms / p.p50_ms:.1f}x"
        print(
            f"{p.name:<48} {p.p50_ms:>8.3f} {p.p95_ms:>8.3f} "
            f"{statistics.mean(p.hits):>11.1f} {ratio:>10}"
        )


def summarize(results: Sequence[Result]) -> None:
    for r in results:
        emit(
            "search",
            f"query p50, {r.sessions}x{MESSAGES_PER_SESSION} docs, 32 Sessions, top 10",
            r.path(0).p50_ms,
            r.path(1).p50_ms,
            unit="ms",
            better="lower",
            baseline_what="bare tantivy query, default tokenizer",
        )
    last = results[-1]
    emit(
        "search",
        f"WorkHub evidence p50, {last.sessions}x{MESSAGES_PER_SESSION} docs",
        last.path(3).p50_ms,
        last.path(4).p50_ms,
        unit="ms",
        better="lower",
        baseline_what="bare tantivy query, same filters and limit",
    )


async def main(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="maka-search-bench-") as tmp:
        workdir = Path(tmp)
        configure_tokenizer(workdir / "jieba")
        t0 = time.perf_counter()
        warm_up()
        print(f"jieba load (first run builds its cache): {time.perf_counter() - t0:.2f} s")
        sample = session_documents(SIZES[-1], random.Random(0))
        corpus, cold = tokenizer_throughput(sample)
        print(
            f"tokenizer throughput: {corpus / 1e6:.2f} M chars/s over the corpus, "
            f"{cold / 1e6:.2f} M chars/s with nothing cached"
        )
        results = []
        for sessions in SIZES:
            print(f"  {sessions} Sessions...", file=sys.stderr)
            results.append(await run_size(sessions, workdir, args.queries))
            print_size(results[-1])
    print(
        "\nnote: bare = tantivy with its own API, no product code (benchmarks/_bare_tantivy.py); "
        "the default tokenizer keeps a run of Chinese characters as one token, so it matches "
        "far less Chinese: a lower bound, not the same search. p50 ratio = product / bare. "
        "found: hits (top 10 rows), Sessions with a hit (evidence rows)."
    )
    met = all(r.path(0).p50_ms <= TARGET_MEDIAN_MS for r in results)
    print(
        f"target index median <= {TARGET_MEDIAN_MS:g} ms at every size:",
        "met" if met else "MISSED",
    )
    problems = [p for r in results for p in r.problems]
    print("check: every hit within the filter:", "ok" if not problems else "FAILED")
    for p in problems[:5]:
        print(f"  {p}")
    summarize(results)
    return 0 if met and not problems else 1


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--queries", type=int, help="timed queries per size (300)")
    parser.add_argument("--quick", action="store_true", help="a smoke check: 100 queries a size")
    args = parser.parse_args()
    args.queries = args.queries or (100 if args.quick else 300)
    if args.queries < 1:
        parser.error("--queries must be positive")
    return args


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse_args())))
