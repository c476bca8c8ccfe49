"""History sync benchmark, run by hand: `.venv/bin/python benchmarks/sync.py` (`make bench` runs
it with the defaults; `--quick` is a smoke check: 8 chats of 250 messages).

Measures how fast Feishu history lands in the database through the real sync path, next to
plain bulk writes of the same rows, in the same run and database:

1. sync: `SyncRunner.sync_kind("feishu")` with the real `FeishuHistory` adapter and
   `FeishuApi` (token cache, retry policy, per-call usage counting in `api_usage`) against
   `tests.fakes.FeishuFake` serving `--chats` group chats of `--messages` messages each (plus
   `--threads` threads of 3 replies per chat, read with `container_id_type=thread`); pages of
   50, committed one by one with their cursor (and lease check) as in production; records/s =
   records stored / wall time, observation included;
2. page commits only: the same pages replayed from memory through the same runner (every
   page: one multi-row insert plus the cursor update, in its own transaction), no API;
3. bulk INSERT: the same rows, `INSERT … ON CONFLICT DO NOTHING` in 1,000-row statements;
4. COPY (PostgreSQL only): the same rows with asyncpg `copy_records_to_table`.

The fake runs in its own process (`--serve-fake`, internal) so its CPU is not the client's;
its thread-root lookup is cached (the stored history does not change during a run; the stock
fake recomputes it for every request, which would make the fake the bottleneck). Calls run 4
at once with the 250 ms spacing turned off: with production pacing a sync is bounded by the
pacer at 4 calls/s × 50 = 200 messages/s per process, by design (Feishu quotas), not by
this code. Search indexing is not part of the measurement (`--index embedded` adds it).

Target: sync >= 10,000 records/s into PostgreSQL. After each phase the database must hold
every record exactly once, or the run exits 1. `--check` exits 1 when the target is missed.

The baseline is COPY (phase 4), the fastest way PostgreSQL takes rows: at the end one summary
line each (benchmarks/_summary.py) for sync and for page commits, records/s beside COPY's.
SQLite has no COPY: there the baseline is the bulk INSERT of phase 3, and the lines say so.

    --database postgres|sqlite   postgres (default): MAKA_BENCH_DATABASE_URL or
                                 postgresql://postgres@127.0.0.1:5432/test names the server;
                                 a database is created there and dropped afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import random
import secrets
import signal
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any

from _summary import emit
from sqlalchemy import delete, func, select, text

SELF = Path(__file__).resolve()
ROOT = SELF.parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bot.cli.serve import until_stop_signal  # noqa: E402
from sources.base import Page, SyncRequest, UnitState  # noqa: E402
from sources.runner import SyncRunner  # noqa: E402
from storage.db import Database, create_database  # noqa: E402
from storage.models import Source, SourceRecord  # noqa: E402
from storage.repos import source_records as repo  # noqa: E402
from storage.repos.source_records import NewRecord  # noqa: E402
from storage.types import utcnow  # noqa: E402
from storage.urls import asyncpg_dsn, normalize_database_url  # noqa: E402

DEFAULT_PG_URL = "postgresql://postgres@127.0.0.1:5432/test"
TARGET = 10_000.0
BULK_ROWS = 1000
TEXTS = [
    "早上好，今天的站会改到十点",
    "The deploy to staging finished; p99 went from {n} ms to {m} ms after the cache change.",
    "帮我看一下 ERR_CONN_RESET 的告警，src/server/ws.ts 第 {n} 行",
    "周报：完成了数据库迁移和灰度发布，下周继续跟进性能问题，{name} 负责日志采集。",
    "ok",
    "Can someone review PR #{n}? It touches bot/channels/feishu/api.py and the retry policy.",
    "下午三点和 {name} 开会讨论 Q{q} 的规划，会议室 A{n}",
    "👍",
]
NAMES = ["张伟", "王芳", "李娜", "Alice", "Bob", "刘洋"]


# ---- the fake, in its own process ----------------------------------------------------------


def build_fake(config: dict[str, Any]) -> Any:
    from tests.fakes import FeishuFake, HistoryMessage

    class BenchFake(FeishuFake):
        """The stock fake, with the thread-root map computed once (history is static)."""

        _roots: dict[str, Any] | None = None

        def _thread_roots(self) -> dict[str, Any]:
            if self._roots is None:
                self._roots = super()._thread_roots()
            return self._roots

    fake = BenchFake(bot_open_id="ou_bench_bot")
    rnd = random.Random(7)
    start = time.time() - 30 * 86400
    for c in range(config["chats"]):
        chat_id = f"oc_bench_{c:03d}"
        fake.add_chat(chat_id, name=f"bench chat {c}")
        messages = []
        for i in range(config["messages"]):
            body = rnd.choice(TEXTS).format(
                n=rnd.randint(1, 999),
                m=rnd.randint(1, 999),
                q=rnd.randint(1, 4),
                name=rnd.choice(NAMES),
            )
            messages.append(
                HistoryMessage.text(
                    body,
                    create_time=start + i * 20 + c,
                    sender_open_id=f"ou_member_{rnd.randrange(12)}",
                )
            )
        for t in range(config["threads"]):
            root = messages[(t * 997) % len(messages)]
            root.thread_id = f"omt_bench_{c:03d}_{t}"
            for r in range(3):
                messages.append(
                    HistoryMessage.text(
                        f"reply {r} to thread {t}",
                        create_time=root.create_time_ms / 1000 + 5 + r,
                        thread_id=root.thread_id,
                        root_id=root.message_id,
                        parent_id=root.message_id,
                    )
                )
        fake.add_history(chat_id, messages)
    return fake


async def serve_fake(config: dict[str, Any]) -> None:
    logging.basicConfig(level=logging.WARNING)
    fake = build_fake(config)
    await fake.start()
    app_id, app_secret = fake.new_app()
    print(f"READY {fake.url} {app_id} {app_secret} {len(fake.messages)}", flush=True)
    await until_stop_signal()
    await fake.close()


@dataclass
class FakeProcess:
    url: str
    app_id: str
    app_secret: str
    messages: int
    pid: int = 0

    def cpu_seconds(self) -> float | None:
        """User + system CPU time of the fake's process so far (Linux only)."""
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.asynccontextmanager
async def fake_process(config: dict[str, Any]) -> AsyncIterator[FakeProcess]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(SELF),
        "--serve-fake",
        json.dumps(config),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL,
    )
    try:
        assert proc.stdout is not None
        async with asyncio.timeout(120):
            line = (await proc.stdout.readline()).decode().strip()
        if not line.startswith("READY "):
            raise RuntimeError(f"the fake did not start (exit {await proc.wait()})")
        _, url, app_id, app_secret, count = line.split()
        yield FakeProcess(url, app_id, app_secret, int(count), proc.pid)
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                async with asyncio.timeout(15):
                    await proc.wait()
            except TimeoutError:
                proc.kill()
                await proc.wait()


# ---- databases -------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def database(kind: str) -> AsyncIterator[tuple[str, str]]:
    from storage.migrate import migrate

    if kind == "sqlite":
        with tempfile.TemporaryDirectory(prefix="maka-bench-sync-") as tmp:
            url = normalize_database_url(f"sqlite:///{Path(tmp) / 'maka.db'}")
            db = create_database(url)
            await migrate(db)
            await db.dispose()
            yield url, f"sqlite, WAL, {tmp}"
        return
    import asyncpg
    from sqlalchemy.engine import make_url

    base = normalize_database_url(os.environ.get("MAKA_BENCH_DATABASE_URL", DEFAULT_PG_URL))
    name = f"maka_bench_sync_{os.getpid()}_{secrets.token_hex(3)}"
    conn = await asyncpg.connect(asyncpg_dsn(base))
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
        url = make_url(base).set(database=name).render_as_string(hide_password=False)
        db = create_database(url)
        try:
            await migrate(db)
        finally:
            await db.dispose()
        yield url, f"postgres, {make_url(base).set(password=None).render_as_string()}"
    finally:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.close()


async def count_records(db: Database) -> tuple[int, int]:
    async with db.read() as s:
        total = int(await s.scalar(select(func.count(SourceRecord.id))) or 0)
        distinct = int(
            await s.scalar(
                select(func.count()).select_from(
                    select(SourceRecord.source, SourceRecord.external_id).distinct().subquery()
                )
            )
            or 0
        )
    return total, distinct


async def empty(db: Database) -> None:
    async with db.write() as s:
        await s.execute(delete(SourceRecord))
        await s.execute(delete(Source))
    if not db.is_sqlite:
        async with db.engine.connect() as conn:
            await conn.execute(text("COMMIT"))
            await conn.execute(text("VACUUM ANALYZE source_records"))


# ---- phases ----------------------------------------------------------------------------------


@dataclass
class Phase:
    name: str
    records: int
    wall: float
    ok: bool
    detail: str = ""

    @property
    def rate(self) -> float:
        return self.records / self.wall if self.wall else 0.0


async def phase_sync(db: Database, fake: FakeProcess, index: str, data_dir: Path) -> Phase:
    from bot.channels.api_usage import ApiUsageCounter
    from bot.channels.feishu.api import FeishuApi
    from bot.sync.adapters import render_feishu
    from sources.feishu.history import FeishuHistory
    from sources.feishu.transport import Pacer

    usage = ApiUsageCounter(db, "feishu", UTC)
    api = FeishuApi(app_id=fake.app_id, app_secret=fake.app_secret, domain=fake.url, usage=usage)
    adapter = FeishuHistory(
        api, db, render=render_feishu, pacer=Pacer(4, 0.0), on_close=usage.aclose
    )
    render_feishu("text", '{"text": "warm"}', [])  # its imports: not part of a sync
    indexer = search = None
    if index == "embedded":
        from bot.memory.search import SearchService
        from bot.memory.source_index import SourceIndexer
        from storage.search.embedded import EmbeddedSearchIndex

        search = SearchService(EmbeddedSearchIndex(data_dir / "search"))
        indexer = SourceIndexer(db, search)
    runner = SyncRunner(
        db,
        {"feishu": adapter},
        "bench",
        lease=timedelta(minutes=5),
        on_records=indexer.after_commit if indexer else None,
    )
    await api.tenant_token()  # warm: not part of a sync's steady state
    fake_cpu, own_cpu = fake.cpu_seconds(), time.process_time()
    began = time.perf_counter()
    results = await runner.sync_kind("feishu", concurrency=4)
    if indexer is not None:
        await indexer.flush()
    wall = time.perf_counter() - began
    fake_after = fake.cpu_seconds()
    shares = f"cpu: sync process {(time.process_time() - own_cpu) / wall:.0%}"
    if fake_cpu is not None and fake_after is not None:
        shares += f", fake {(fake_after - fake_cpu) / wall:.0%}"
    await adapter.aclose()
    if indexer is not None and search is not None:
        await indexer.close()
        await search.close()
    errors = [r for r in results if r.error or r.skipped]
    total, distinct = await count_records(db)
    new = sum(r.new for r in results)
    calls = await api_calls(db)
    ok = not errors and total == distinct == fake.messages == new
    detail = f"{calls} API calls, {shares}" + (f", errors: {errors[:2]}" if errors else "")
    return Phase("sync from the Feishu fake (API + DB)", total, wall, ok, detail)


async def api_calls(db: Database) -> int:
    from storage.models import ApiUsage

    async with db.read() as s:
        return int(
            await s.scalar(
                select(func.coalesce(func.sum(ApiUsage.calls), 0)).where(
                    ApiUsage.api == "im.message.list"
                )
            )
            or 0
        )


async def stored_rows(db: Database) -> list[NewRecord]:
    async with db.read() as s:
        rows = (await s.scalars(select(SourceRecord).order_by(SourceRecord.id))).all()
    return [
        NewRecord(
            source=r.source,
            external_id=r.external_id,
            scope=r.scope,
            text=r.text,
            sent_at=r.sent_at,
            author=r.author,
            title=r.title,
            thread_key=r.thread_key,
            payload=dict(r.payload),
        )
        for r in rows
    ]


class ReplayAdapter:
    """The synced pages again, from memory: the runner's commit path without the API."""

    kind = "feishu"

    def __init__(self, rows: list[NewRecord]) -> None:
        self.by_source: dict[str, list[NewRecord]] = {}
        for row in rows:
            self.by_source.setdefault(row.source, []).append(row)

    async def observe(self) -> Any:
        from sources.base import Observation, Unit

        units = [Unit(name, f"group:{name.split(':', 1)[1]}") for name in self.by_source]
        return Observation(units, {})

    async def sync(self, unit: UnitState, request: SyncRequest) -> AsyncGenerator[Page, None]:
        rows = self.by_source[unit.name]
        for n in range(0, len(rows), 50):
            yield Page(rows[n : n + 50], {"replayed": n + 50})

    async def aclose(self) -> None:
        pass


async def phase_replay(db: Database, rows: list[NewRecord]) -> Phase:
    await empty(db)
    runner = SyncRunner(db, {"feishu": ReplayAdapter(rows)}, "replay", lease=timedelta(minutes=5))
    began = time.perf_counter()
    results = await runner.sync_kind("feishu", concurrency=4)
    wall = time.perf_counter() - began
    total, distinct = await count_records(db)
    ok = total == distinct == len(rows) and not any(r.error for r in results)
    return Phase("page commits only (same pages, no API)", total, wall, ok)


async def phase_bulk(db: Database, rows: list[NewRecord]) -> Phase:
    await empty(db)
    began = time.perf_counter()
    for n in range(0, len(rows), BULK_ROWS):
        async with db.write() as s:
            await repo.insert_records(s, rows[n : n + BULK_ROWS], utcnow())
    wall = time.perf_counter() - began
    total, distinct = await count_records(db)
    return Phase(
        f"bulk INSERT, {BULK_ROWS}-row statements", total, wall, total == distinct == len(rows)
    )


async def phase_copy(db: Database, url: str, rows: list[NewRecord]) -> Phase:
    import asyncpg

    await empty(db)
    now = utcnow()
    columns = [
        "source", "external_id", "scope", "title", "text", "author", "sent_at", "thread_key",
        "payload", "created_at",
    ]  # fmt: skip
    values = [
        (r.source, r.external_id, r.scope, r.title, r.text, r.author, r.sent_at, r.thread_key,
         json.dumps(r.payload, ensure_ascii=False), now)
        for r in rows
    ]  # fmt: skip
    conn = await asyncpg.connect(asyncpg_dsn(url))
    try:
        began = time.perf_counter()
        await conn.copy_records_to_table("source_records", records=values, columns=columns)
        wall = time.perf_counter() - began
    finally:
        await conn.close()
    total, distinct = await count_records(db)
    return Phase("COPY (asyncpg)", total, wall, total == distinct == len(rows))


# ---- main ------------------------------------------------------------------------------------


async def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    config = {"chats": args.chats, "messages": args.messages, "threads": args.threads}
    async with fake_process(config) as fake, database(args.database) as (url, where):
        db = create_database(url, pool_size=8)
        try:
            print(f"  sync of {fake.messages} messages...", file=sys.stderr)
            with tempfile.TemporaryDirectory(prefix="maka-bench-index-") as tmp:
                sync = await phase_sync(db, fake, args.index, Path(tmp))
            rows = await stored_rows(db)
            print("  replaying the pages...", file=sys.stderr)
            replay = await phase_replay(db, rows)
            print("  bulk insert...", file=sys.stderr)
            bulk = await phase_bulk(db, rows)
            phases = [sync, replay, bulk]
            if not db.is_sqlite:
                print("  COPY...", file=sys.stderr)
                phases.append(await phase_copy(db, url, rows))
        finally:
            await db.dispose()
    print(
        f"\nhistory sync, {where}\n{args.chats} chats × ({args.messages} messages + "
        f"{args.threads} threads × 3 replies) = {fake.messages} records; pages of 50, "
        f"4 calls at once, pacing off; search indexing: {args.index}"
    )
    print(f"{'path':<42} {'records/s':>10} {'wall s':>8}  {'records':>8}")
    for p in phases:
        flag = "" if p.ok else "  INTEGRITY FAILED"
        extra = f"  ({p.detail})" if p.detail else ""
        print(f"{p.name:<42} {p.rate:>10,.0f} {p.wall:>8.2f}  {p.records:>8}{flag}{extra}")
    met = sync.rate >= TARGET
    print(f"{'PASS' if met else 'MISS'}  sync {sync.rate:,.0f} records/s (target >= {TARGET:,.0f})")
    print(
        f"ratio  sync / bulk INSERT {sync.rate / bulk.rate:.2f}; "
        f"page commits / bulk INSERT {replay.rate / bulk.rate:.2f}"
    )
    copy = phases[3] if len(phases) > 3 else None
    if copy is not None:
        print(
            f"ratio  sync / COPY {sync.rate / copy.rate:.2f}; "
            f"page commits / COPY {replay.rate / copy.rate:.2f}"
        )
    print(
        "note  with production pacing (250 ms between call starts) a sync reads at most "
        "4 pages/s = 200 messages/s per process, by design"
    )
    if not all(p.ok for p in phases):
        return 1  # the numbers mean nothing: no summary lines
    baseline = copy or bulk
    baseline_what = "COPY, asyncpg" if copy else f"bulk INSERT, {BULK_ROWS}-row statements"
    kind = where.split(",")[0]
    for what, phase in (("history sync", sync), ("page commits only", replay)):
        emit(
            "sync",
            f"{what}, {kind}",
            phase.rate,
            baseline.rate,
            unit="records/s",
            better="higher",
            baseline_what=baseline_what,
        )
    return 1 if args.check and not met else 0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--database", choices=["postgres", "sqlite"], default="postgres")
    parser.add_argument("--chats", type=int, default=40)
    parser.add_argument("--messages", type=int, default=1250, help="per chat (1250)")
    parser.add_argument("--threads", type=int, default=5, help="per chat, 3 replies each (5)")
    parser.add_argument("--index", choices=["none", "embedded"], default="none")
    parser.add_argument("--check", action="store_true", help="exit 1 when the target is missed")
    parser.add_argument("--quick", action="store_true", help="a smoke check: 8 chats x 250")
    parser.add_argument("--serve-fake", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.chats, args.messages, args.threads = 8, 250, 2
    return args


def main() -> int:
    args = parse_args()
    if args.serve_fake:
        asyncio.run(serve_fake(json.loads(args.serve_fake)))
        return 0
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
