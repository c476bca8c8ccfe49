"""Embedded search benchmark, run by hand: `.venv/bin/python benchmarks/search.py`.

For 32 sessions x 60 messages and 320 x 60, builds a tantivy index from realistic mixed
Chinese/English chat messages (seeded, so every run sees the same data) and reports index
build time, median/p95 query time with the query filtered to 32 session ids, and tokenizer
throughput. Target: median query <= 2 ms at both sizes.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from storage.search.base import SearchDocument, SearchFilters
from storage.search.embedded import EmbeddedSearchIndex
from storage.search.tokenizer import clear_caches, configure_tokenizer, tokenize, warm_up

MESSAGES_PER_SESSION = 60
SIZES = (32, 320)
FILTER_SESSIONS = 32
QUERY_COUNT = 300
UPSERT_BATCH = 500

PEOPLE = ["张伟", "王芳", "李娜", "刘洋", "陈静", "杨帆", "小马", "Alice", "Bob"]
TOPICS = ["部署", "重连", "数据库迁移", "权限申请", "周报", "报销", "机器人回调", "缓存雪崩",
          "飞书审批", "灰度发布", "日志采集", "性能优化"]  # fmt: skip
ERRORS = ["ERR_CONN_RESET", "ECONNREFUSED", "HTTP 502", "OOMKilled", "TimeoutError",
          "KeyError: 'user_id'", "SQLSTATE 40001"]  # fmt: skip
PATHS = ["src/server/ws.ts", "bot/channels/feishu.py", "storage/search/meili.py",
         "deploy/k8s/values.yaml", "web/app/page.tsx"]  # fmt: skip
FUNCS = ["getUserName", "sendMessageCard", "refreshTenantToken", "handleEventCallback",
         "parseRichText"]  # fmt: skip
TEMPLATES = [
    "{person}说{topic}又出问题了，日志里是 {err}，在 {path} 第{n}行",
    "明天下午{n}点开会讨论{topic}，记得带上上周的数据",
    "Deploy to staging failed: {err} in {path}, rolling back",
    "我把 {func} 改成异步了，麻烦 review 一下 PR #{n}",
    "提醒我周{day}给{person}回电话，关于{topic}的事情",
    "监控显示过去一小时大量重连，{err}，怀疑是 {func} 超时",
    "The {topic} latency went up to {n}ms after yesterday's release",
    "{person}: 好的，我看一下 {path}，今天之内给你答复",
    "帮我记一下：{topic}需要在月底前完成，负责人是{person}",
    "Can you check why {func} returns null for tenant {n}?",
    "线上报警 {err}，已经自动扩容到 {n} 个副本",
    "周{day}的周报：完成了{topic}，下周继续跟进性能问题",
]
QUERIES = ["重连", "部署", "数据库", "ERR_CONN_RESET", "ws.ts", "getUserName", "周报", "超时",
           "review", "latency", "飞书", "报销", "OOMKilled", "扩容", "tenant", "灰度",
           "sendMessageCard", "张伟", "meili.py", "回电话"]  # fmt: skip


@dataclass(frozen=True)
class Result:
    sessions: int
    docs: int
    build_s: float
    median_ms: float
    p95_ms: float
    mean_hits: float


def make_messages(sessions: int, rnd: random.Random) -> list[SearchDocument]:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    docs = []
    for s in range(sessions):
        for m in range(MESSAGES_PER_SESSION):
            parts = [_fill(rnd.choice(TEMPLATES), rnd) for _ in range(rnd.choice((1, 1, 1, 2, 3)))]
            docs.append(
                SearchDocument(
                    id=f"oc_{s:04d}/om_{m:03d}",
                    kind=rnd.choice(("message", "message", "message", "note")),
                    text="。".join(parts),
                    session_id=f"oc_{s:04d}",
                    source_id=f"feishu:{s}:{m}",
                    scope=rnd.choice(("private", "group")),
                    time=start + timedelta(minutes=s * MESSAGES_PER_SESSION + m),
                )
            )
    return docs


def _fill(template: str, rnd: random.Random) -> str:
    return template.format(
        person=rnd.choice(PEOPLE),
        topic=rnd.choice(TOPICS),
        err=rnd.choice(ERRORS),
        path=rnd.choice(PATHS),
        func=rnd.choice(FUNCS),
        n=rnd.randint(1, 500),
        day=rnd.choice("一二三四五"),
    )


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


async def run_size(sessions: int, workdir: Path) -> Result:
    rnd = random.Random(sessions)
    docs = make_messages(sessions, rnd)
    index = EmbeddedSearchIndex(workdir / f"idx-{sessions}")
    clear_caches()  # the build pays for its own tokenizing
    started = time.perf_counter()
    for i in range(0, len(docs), UPSERT_BATCH):
        await index.upsert(docs[i : i + UPSERT_BATCH])
    build = time.perf_counter() - started

    all_sessions = sorted({d.session_id for d in docs if d.session_id})
    timings, hits = [], []
    for n in range(QUERY_COUNT):
        allowed = rnd.sample(all_sessions, min(FILTER_SESSIONS, len(all_sessions)))
        query = QUERIES[n % len(QUERIES)]
        t0 = time.perf_counter()
        found = await index.search(query, SearchFilters(session_ids=allowed), limit=10)
        timings.append(time.perf_counter() - t0)
        hits.append(len(found))
    await index.close()
    timings.sort()
    return Result(
        sessions=sessions,
        docs=len(docs),
        build_s=build,
        median_ms=statistics.median(timings) * 1000,
        p95_ms=timings[int(len(timings) * 0.95)] * 1000,
        mean_hits=statistics.mean(hits),
    )


async def main() -> int:
    with tempfile.TemporaryDirectory(prefix="maka-search-bench-") as tmp:
        workdir = Path(tmp)
        configure_tokenizer(workdir / "jieba")
        t0 = time.perf_counter()
        warm_up()
        print(f"jieba load (first run builds its cache): {time.perf_counter() - t0:.2f} s")
        sample = make_messages(SIZES[-1], random.Random(0))
        corpus, cold = tokenizer_throughput(sample)
        print(
            f"tokenizer throughput: {corpus / 1e6:.2f} M chars/s over the corpus, "
            f"{cold / 1e6:.2f} M chars/s with nothing cached"
        )
        ok = True
        for sessions in SIZES:
            r = await run_size(sessions, workdir)
            ok &= r.median_ms <= 2.0
            print(
                f"{r.sessions:>4} sessions x {MESSAGES_PER_SESSION} = {r.docs:>6} docs: "
                f"build {r.build_s:.2f} s, query median {r.median_ms:.3f} ms, "
                f"p95 {r.p95_ms:.3f} ms (filtered to {FILTER_SESSIONS} sessions, "
                f"{r.mean_hits:.1f} hits/query)"
            )
        print("target median <= 2 ms:", "met" if ok else "MISSED")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
