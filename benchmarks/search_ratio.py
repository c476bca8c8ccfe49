"""The search path beside bare tantivy, three ratios in one run (issue #43: each at or under
2x). `make bench-search`, or by hand: `.venv/bin/python benchmarks/search_ratio.py`
(`--quick`: 10,000 memory documents instead of 100,000 and fewer queries).

The same three product calls `search.py` and `memory.py` time, over the same documents, each
interleaved query by query with a bare tantivy query over the same documents
(benchmarks/_bare_tantivy.py: tantivy's own API, no product code):

1. query: `EmbeddedSearchIndex.search(query, SearchFilters(session_ids=32 ids), limit=10)`
   over 320 Sessions x 60 messages (`search.session_documents`); bare: the same filter, top 10.
2. WorkHub evidence: `gather_evidence` through `SearchService` (BEST_MESSAGE: the 32 ids and
   the message kinds as filters, up to 128 hits grouped per Session); bare: the same filters
   and limit, grouped per Session.
3. scoped memory search: `SearchService.search(query, SearchFilters(scopes=[scope]), 10)`
   over `--docs` source messages in 10 scopes (`memory.make_documents`, what the source
   indexer writes); bare: a term query on the scope, top 10.

Everything the product does is timed: jieba query tokens, the worker-thread hop, the filter
clauses, BM25 normalization, payload decoding, excerpts. The bare queries run on the loop
thread and fetch each hit's stored id and text. The ratio is product p50 / bare p50 with
tantivy's default tokenizer (a lower bound: it keeps a run of Chinese characters as one token
and so matches less); the ratio to bare tantivy over the product's own jieba tokens is printed
beside it. The timing repeats `--rounds` times (each round interleaving all paths query by
query); the ratio is of the p50s over every round, and each round's ratio is printed beside
it to show the spread on a shared machine.

Exits 1 when a ratio is over the 2x target or a hit comes from outside its filter.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from _bare_tantivy import BareIndex
from _corpus import QUERY_POOL
from _summary import emit
from memory import make_documents
from search import FILTER_SESSIONS, session_documents, session_of

from bot.config import EvidenceStrategy
from bot.memory.search import SearchService
from bot.workhub.evidence import MESSAGE_KINDS, gather_evidence
from storage.search.base import SearchDocument, SearchFilters
from storage.search.embedded import EmbeddedSearchIndex
from storage.search.tokenizer import configure_tokenizer, warm_up

TARGET_RATIO = 2.0
SESSIONS = 320
SCOPES = 10
UPSERT_BATCH = 500  # the indexers' batch
WARM_UP_QUERIES = 20
EVIDENCE_LIMIT = min(200, 4 * FILTER_SESSIONS)  # gather_evidence's, for BEST_MESSAGE
Run = Callable[[str, list[str]], Awaitable[int]]


@dataclass
class Path_:
    name: str
    run: Run
    rounds: list[list[float]] = field(default_factory=list)

    def p50_ms(self, n: int) -> float:
        return statistics.median(self.rounds[n]) * 1000

    @property
    def all_p50_ms(self) -> float:
        return statistics.median(s for r in self.rounds for s in r) * 1000


@dataclass
class Figure:
    """A product path and its two bare baselines (default tokenizer, jieba tokens)."""

    what: str
    product: Path_
    bare: Path_
    bare_jieba: Path_
    plan: list[tuple[str, list[str]]]

    def ratios(self, baseline: Path_) -> list[float]:
        return [
            self.product.p50_ms(n) / baseline.p50_ms(n) for n in range(len(self.product.rounds))
        ]

    @property
    def ratio(self) -> float:
        """Product p50 / bare p50 (default tokenizer), every round's queries pooled."""
        return self.product.all_p50_ms / self.bare.all_p50_ms


async def build(docs: list[SearchDocument], where: Path) -> tuple[EmbeddedSearchIndex, BareIndex]:
    index = EmbeddedSearchIndex(where / "product")
    for n in range(0, len(docs), UPSERT_BATCH):
        await index.upsert(docs[n : n + UPSERT_BATCH])
    bare = await asyncio.to_thread(BareIndex, where / "bare", docs)
    return index, bare


def bare_run(bare: BareIndex, field_name: str, limit: int, *, jieba: bool, kinds: bool) -> Run:
    async def run(query: str, allowed: list[str]) -> int:
        filters = {field_name: allowed, **({"kind": list(MESSAGE_KINDS)} if kinds else {})}
        found = (bare.jieba if jieba else bare.default)(query, filters, limit)
        if kinds:  # as gather_evidence: the Sessions with a hit
            return len(dict.fromkeys(session_of(doc_id) for doc_id, _ in found))
        return len(found)

    return run


def bare_paths(bare: BareIndex, field_name: str, limit: int, *, kinds: bool) -> tuple[Path_, Path_]:
    """The two baselines: tantivy's default tokenizer, and the product's jieba tokens."""
    return (
        Path_(
            "bare, default tokenizer", bare_run(bare, field_name, limit, jieba=False, kinds=kinds)
        ),
        Path_("bare, jieba tokens", bare_run(bare, field_name, limit, jieba=True, kinds=kinds)),
    )


async def session_figures(
    workdir: Path, queries: int, problems: list[str]
) -> tuple[list[Figure], EmbeddedSearchIndex]:
    rnd = random.Random(SESSIONS)
    docs = session_documents(SESSIONS, rnd)
    index, bare = await build(docs, workdir / "sessions")
    service = SearchService(index)
    all_sessions = sorted({d.session_id for d in docs if d.session_id})
    plan = [
        (QUERY_POOL[n % len(QUERY_POOL)], rnd.sample(all_sessions, FILTER_SESSIONS))
        for n in range(queries)
    ]

    async def query(text: str, allowed: list[str]) -> int:
        hits = await index.search(text, SearchFilters(session_ids=allowed), limit=10)
        if outside := [h.session_id for h in hits if h.session_id not in allowed]:
            problems.append(f"{text!r}: hits from Sessions {outside[:3]} outside the filter")
        return len(hits)

    async def evidence(text: str, allowed: list[str]) -> int:
        found, status = await gather_evidence(service, text, allowed, EvidenceStrategy.BEST_MESSAGE)
        if status != "ok" or set(found) - set(allowed):
            problems.append(f"{text!r}: evidence {status}, Sessions {sorted(found)[:3]}")
        return len(found)

    figures = [
        Figure(
            f"query, {SESSIONS}x60 docs, 32 Sessions, top 10",
            Path_("EmbeddedSearchIndex.search", query),
            *bare_paths(bare, "session_id", 10, kinds=False),
            plan,
        ),
        Figure(
            f"WorkHub evidence, {SESSIONS}x60 docs, up to {EVIDENCE_LIMIT}",
            Path_("gather_evidence", evidence),
            *bare_paths(bare, "session_id", EVIDENCE_LIMIT, kinds=True),
            plan,
        ),
    ]
    return figures, index


async def memory_figure(
    workdir: Path, docs_count: int, queries: int, problems: list[str]
) -> tuple[Figure, EmbeddedSearchIndex]:
    docs = make_documents(docs_count, SCOPES)
    index, bare = await build(docs, workdir / "memory")
    service = SearchService(index)
    rnd = random.Random(7)
    scopes = sorted({d.scope for d in docs if d.scope})
    plan = [(rnd.choice(QUERY_POOL), [rnd.choice(scopes)]) for _ in range(queries)]

    async def scoped(text: str, allowed: list[str]) -> int:
        hits = await service.search(text, SearchFilters(scopes=allowed), 10)
        if outside := [h.scope for h in hits if h.scope not in allowed]:
            problems.append(f"{text!r} in {allowed[0]}: hits from {outside[:3]}")
        return len(hits)

    figure = Figure(
        f"scoped memory search, {docs_count // 1000}k docs, 1 scope, top 10",
        Path_("SearchService.search, scopes", scoped),
        *bare_paths(bare, "scope", 10, kinds=False),
        plan,
    )
    return figure, index


async def time_rounds(figures: list[Figure], rounds: int) -> None:
    for figure in figures:
        paths = (figure.product, figure.bare, figure.bare_jieba)
        for query, allowed in figure.plan[:WARM_UP_QUERIES]:
            for path in paths:
                await path.run(query, allowed)
    for _ in range(rounds):
        for figure in figures:
            paths = (figure.product, figure.bare, figure.bare_jieba)
            for path in paths:
                path.rounds.append([])
            for query, allowed in figure.plan:
                for path in paths:
                    t0 = time.perf_counter()
                    await path.run(query, allowed)
                    path.rounds[-1].append(time.perf_counter() - t0)


def report(figures: list[Figure]) -> bool:
    print(f"\n{'figure / path':<58} {'p50 ms':>8} {'ratio':>7}  ratio per round")
    met = True
    for f in figures:
        print(f.what)
        for path in (f.product, f.bare, f.bare_jieba):
            if path is f.product:
                print(f"  {path.name:<56} {path.all_p50_ms:>8.3f}")
                continue
            per_round = " ".join(f"{r:.2f}" for r in f.ratios(path))
            ratio = f.product.all_p50_ms / path.all_p50_ms
            print(f"  {path.name:<56} {path.all_p50_ms:>8.3f} {ratio:>6.2f}x  {per_round}")
        met &= f.ratio <= TARGET_RATIO
    print(
        "\nratio: product p50 / bare p50, every round pooled (then each round's); the target "
        "is on the default-tokenizer baseline (a lower bound: it matches less Chinese)."
    )
    print(f"target every ratio <= {TARGET_RATIO:g}x:", "met" if met else "MISSED")
    return met


async def main(args: argparse.Namespace) -> int:
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="maka-search-ratio-") as tmp:
        workdir = Path(tmp)
        configure_tokenizer(workdir / "jieba")
        warm_up()
        print("  building the Session and memory indexes...", file=sys.stderr)
        figures, sessions_index = await session_figures(workdir, args.queries, problems)
        memory, memory_index = await memory_figure(workdir, args.docs, args.queries, problems)
        figures.append(memory)
        print(f"  timing {args.rounds} rounds of {args.queries} queries...", file=sys.stderr)
        await time_rounds(figures, args.rounds)
        await sessions_index.close()
        await memory_index.close()
    met = report(figures)
    print("check: every hit within its filter:", "ok" if not problems else "FAILED")
    for p in problems[:5]:
        print(f"  {p}")
    for f in figures:
        emit(
            "search_ratio",
            f"{f.what}, p50",
            f.product.all_p50_ms,
            f.bare.all_p50_ms,
            unit="ms",
            better="lower",
            baseline_what="bare tantivy query, default tokenizer, same filters and limit",
        )
    return 0 if met and not problems else 1


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--docs", type=int, help="memory documents (100,000; --quick 10,000)")
    parser.add_argument("--queries", type=int, help="timed queries a round (200; --quick 100)")
    parser.add_argument("--rounds", type=int, default=5, help="timing rounds (5)")
    parser.add_argument("--quick", action="store_true", help="a smoke check: smaller sizes")
    args = parser.parse_args()
    args.docs = args.docs or (10_000 if args.quick else 100_000)
    args.queries = args.queries or (100 if args.quick else 200)
    if args.docs < SCOPES or args.queries < 1 or args.rounds < 1:
        parser.error("sizes must be positive, with at least one document per scope")
    return args


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse_args())))
