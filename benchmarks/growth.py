"""Cost as history grows: the same reads at 10k and 100k messages (1M with `--size 1m`,
minutes on a small machine), each with 10k task Sessions, and how much each grew.

    .venv/bin/python benchmarks/growth.py [--quick] [--size 1m] [--database postgresql]
    make bench SIZE=1m GROWTH_DATABASE=postgresql     # the same through `make bench`

Per size: a fresh database (SQLite file by default; `--database postgresql` makes one on
MAKA_BENCH_DATABASE_URL's server), migrated, then history written in bulk and measured on the
production code in-process:

- the webhook ack: a signed, encrypted message event POSTed over loopback HTTP to the real
  app's `/feishu/events` (the Feishu fake behind it), to its 200, one at a time;
- `/sync status`: `bot.sync.status.load_status` (what `maka sync status`, `/sync status` and
  the status page's sources section read, `counts_by_source` among it);
- the status page: `bot.web.status.report.build_report` on a real app's Services;
- WorkHub candidates: `storage.repos.workhub.sessions_by_activity`, a page of task Sessions
  most recent first (what routing sorts);
- `/search` and WorkHub candidates with search evidence, after the search followers have
  indexed the history (benchmarks/_growth_search.py says how);
- start-up: a fresh `maka serve` process on the filled database, to `/readyz`, and its RSS
  (benchmarks/_growth_startup.py);
- disk: what the records added to the SQLite files (or `pg_database_size`), per million
  messages, extrapolated linearly from the size run;
- (before): the two reads as they were before migration 0029, on the same data, for
  comparison (a GROUP BY over every record; every candidate Session sorted).

What the bulk write bypasses and why: records go through `storage.repos.source_records.add_records`
(the ingest path's own insert, so the count triggers run) in batches of 5,000 rather than one
webhook POST each, and Sessions are one multi-row insert, not one Bot turn each: writing a
million messages through the webhook would take hours here. The search index is filled by
the production followers in larger batches (see _growth_search.py).

Time: message i is sent at NOW - (messages - i) seconds, one message a second ending at
NOW (midnight UTC, 2026-12-06), so 100k span 28 hours and 1M eleven days. A busy history
is the hard case for search's recent window (storage/search/eras.py), which takes whole
hours: its ~3,000 messages become one hour's 3,600 here.

A Bot turn's fixed cost (the model an instant script), the discovery pre-check and the
index check are measured by _growth_turn.py, /search and WorkHub evidence by
_growth_search.py, a fresh server's start-up and RSS by _growth_startup.py; each docstring
says what it bypasses. Timings are the median of REPEATS runs; on a shared 2-core machine
expect noise of tens of percent.

Prints a table per figure and one summary line each: ours = the largest size's median,
baseline = the smallest size's, ratio = growth (the target is at most 2). Writes the table
to benchmarks/results/growth-<database>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import _growth_search  # noqa: E402
import _growth_startup  # noqa: E402
from _growth_common import CHATS, NOW, SESSIONS, median_ms  # noqa: E402
from _growth_turn import figures as turn_figures  # noqa: E402
from _summary import emit  # noqa: E402
from sqlalchemy import func, insert, select, text  # noqa: E402

from bot.config import Role  # noqa: E402
from bot.sync.status import load_status  # noqa: E402
from bot.web.status.report import build_report  # noqa: E402
from storage.db import Database, create_database  # noqa: E402
from storage.migrate import migrate  # noqa: E402
from storage.models import Session, SourceRecord  # noqa: E402
from storage.repos import source_records, sources, workhub  # noqa: E402
from storage.repos.source_records import NewRecord  # noqa: E402
from storage.urls import normalize_database_url  # noqa: E402
from tests.apps import make_settings, running_app  # noqa: E402
from tests.databases import create_postgres_database, drop_postgres_database  # noqa: E402
from tests.fakes import FeishuEventSender, FeishuFake  # noqa: E402

SIZES = {"10k": 10_000, "100k": 100_000, "1m": 1_000_000}
BATCH = 5_000
RESULTS = ROOT / "benchmarks" / "results"
# Each measures more operations on the running app: (app, messages) -> {figure: value}.
MORE: list[Callable[[Any, int], Awaitable[dict[str, float]]]] = [
    _growth_search.figures,  # indexes the history: before anything that searches it
    # Before the turns: the in-process app then holds the index's writer, and what the turns
    # log would wait for it in the fresh server's follower.
    _growth_startup.figures,
    turn_figures,
]
ENCRYPT_KEY, TOKEN = "bench-encrypt-key", "bench-verification-token"


async def _fill_records(db: Database, messages: int) -> None:
    for start in range(0, messages, BATCH):
        batch = [
            NewRecord(
                f"feishu:oc_{i % CHATS}",
                f"om_{i}",
                f"feishu:oc_{i % CHATS}",
                f"message {i}: the quarterly numbers and the launch plan, again",
                NOW - timedelta(seconds=messages - i),
                author=f"ou_{i % 37}",
            )
            for i in range(start, min(start + BATCH, messages))
        ]
        async with db.write() as tx:
            await source_records.add_records(tx, batch, NOW)
        async with db.write() as tx:  # what the record-counts worker does (PostgreSQL)
            await source_records.fold_record_counts(tx)
    async with db.write() as tx:
        for source in {f"feishu:oc_{c}" for c in range(CHATS)}:
            await sources.ensure(tx, name=source, kind="feishu", scope=None, title=None, now=NOW)


async def _fill_sessions(db: Database) -> None:
    rows: list[dict[str, Any]] = [
        {
            "name": f"task {i}",
            "state": "active",
            "is_archived": i % 5 == 0,
            "labels": [],
            "created_at": NOW - timedelta(days=60),
            "last_message_at": NOW - timedelta(minutes=i) if i % 2 else None,
            "status_updated_at": NOW - timedelta(minutes=i, seconds=30),
        }
        for i in range(SESSIONS)
    ]
    async with db.write() as tx:
        await tx.execute(insert(Session), rows)
    if not db.is_sqlite:
        # What autovacuum (on by default) would have done during a history written over
        # months: statistics for the planner, and the dead row versions the bulk write left
        # (the record-counts fold rewrites each source's count row per batch) cleared. Some
        # servers run with autovacuum off (this machine's test server does); without this,
        # reads of the count rows walk a dead version per batch, which a burst of 200 batches
        # makes grow with the history and a server with autovacuum never sees.
        async with db.engine.connect() as conn:
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            await conn.execute(text("VACUUM ANALYZE"))


async def _disk_mb(db: Database, url: str) -> float:
    if db.is_sqlite:
        async with db.engine.connect() as conn:  # the write-ahead log's pages into the file
            await conn.execute(text("PRAGMA wal_checkpoint(TRUNCATE)"))
        path = Path(url.split("///", 1)[1])
        return sum(p.stat().st_size for p in path.parent.glob(path.name + "*")) / 1e6
    async with db.read() as tx:
        return float(await tx.scalar(text("SELECT pg_database_size(current_database())"))) / 1e6


SERVER = os.environ.get("MAKA_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")


async def _database(kind: str, workdir: Path) -> str:
    if kind == "sqlite":
        return normalize_database_url(f"sqlite:///{workdir / 'maka.db'}")
    return normalize_database_url(await create_postgres_database(SERVER, migrated=False))


async def measure(kind: str, messages: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        url = await _database(kind, workdir)
        try:
            return await _measure(url, workdir, messages)
        finally:
            if kind != "sqlite":
                await drop_postgres_database(SERVER, url)


async def _measure(url: str, workdir: Path, messages: int) -> dict[str, float]:
    db = create_database(url)
    try:
        await migrate(db)
        empty = await _disk_mb(db, url)
        started = time.perf_counter()
        await _fill_records(db, messages)
        fill_s = time.perf_counter() - started
        disk = await _disk_mb(db, url) - empty
        await _fill_sessions(db)
    finally:
        await db.dispose()
    figures: dict[str, float] = {
        "fill s": fill_s,
        "disk MB per 1M messages": disk * 1e6 / messages,
    }
    async with FeishuFake() as fake:
        app_id, secret = fake.new_app()
        settings = make_settings(
            workdir,
            url,
            feishu_app_id=app_id,
            feishu_app_secret=secret,
            feishu_encrypt_key=ENCRYPT_KEY,
            feishu_verification_token=TOKEN,
            feishu_domain=fake.url,
            feishu_mode="webhook",
        )
        async with running_app(settings, Role.WEB) as app:
            services = app.services

            async def candidates() -> None:
                async with services.db.read() as tx:
                    await workhub.sessions_by_activity(tx, conversation_id=None, offset=0, limit=20)

            async def counts() -> None:
                async with services.db.read() as tx:
                    await source_records.counts_by_source(tx)

            sender = FeishuEventSender(
                f"{app.url}/feishu/events",
                app_id=app_id,
                encrypt_key=ENCRYPT_KEY,
                verification_token=TOKEN,
            )
            sent = iter(range(10**9))

            async def ack() -> None:  # a new message in a chat with history, to its 200
                n = next(sent)
                event = sender.message_event(
                    text=f"ack {n}",
                    message_id=f"om_ack_{n}",
                    chat_id=f"oc_{n % CHATS}",
                    chat_type="group",
                    sender_open_id="ou_ack",
                )
                status, body = await sender.post(event, http=app.http)
                if status != 200:
                    raise RuntimeError(f"webhook answered {status}: {body[:200]}")

            figures["webhook ack ms"] = await median_ms(ack)
            figures["/sync status ms"] = await median_ms(lambda: load_status(services.db))
            figures["counts_by_source ms"] = await median_ms(counts)
            figures["status page report ms"] = await median_ms(lambda: build_report(services))
            figures["WorkHub candidates page ms"] = await median_ms(candidates)

            async def counted_before() -> None:  # counts_by_source before migration 0029
                async with services.db.read() as tx:
                    await tx.execute(
                        select(SourceRecord.source, func.count(SourceRecord.id)).group_by(
                            SourceRecord.source
                        )
                    )

            async def sorted_before() -> None:  # sessions_by_activity before migration 0029
                activity = func.coalesce(
                    Session.last_message_at, Session.status_updated_at, Session.created_at
                )
                async with services.db.read() as tx:
                    await tx.scalars(
                        select(Session)
                        .where(
                            Session.is_archived.is_(False),
                            Session.role.is_(None),
                            Session.subagent_parent.is_(None),
                        )
                        .order_by(activity.desc(), Session.id.asc())
                        .limit(20)
                    )

            figures["(before) GROUP BY count ms"] = await median_ms(counted_before)
            figures["(before) Sessions sorted ms"] = await median_ms(sorted_before)
            for more in MORE:  # the other modules' operations, on the same app and history
                figures.update(await more(app, messages))
    return figures


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10k only, against itself")
    # `make bench SIZE=1m GROWTH_DATABASE=postgresql` reaches here through the environment:
    # run_all.py passes the same arguments to every benchmark.
    parser.add_argument(
        "--size",
        choices=["100k", "1m"],
        default=os.environ.get("MAKA_GROWTH_SIZE") or "100k",
        help="the largest history (default 100k; MAKA_GROWTH_SIZE)",
    )
    parser.add_argument(
        "--database",
        choices=["sqlite", "postgresql"],
        default=os.environ.get("MAKA_GROWTH_DATABASE") or "sqlite",
        help="default sqlite (MAKA_GROWTH_DATABASE)",
    )
    args = parser.parse_args()
    names = ["10k"] if args.quick else ["10k", "100k"] + (["1m"] if args.size == "1m" else [])
    table: dict[str, dict[str, float]] = {}
    for name in names:
        print(f"growth: {name} messages, {SESSIONS} Sessions, {args.database} ...", flush=True)
        table[name] = await measure(args.database, SIZES[name])
    small, large = names[0], names[-1]
    print(f"\n| figure ({args.database}) | " + " | ".join(names) + f" | {large}/{small} |")
    print("|---|" + "---|" * (len(names) + 1))
    for figure in table[small]:
        values = [table[n][figure] for n in names]
        ratio = values[-1] / values[0] if values[0] else float("nan")
        print(f"| {figure} | " + " | ".join(f"{v:.2f}" for v in values) + f" | {ratio:.2f} |")
    RESULTS.mkdir(exist_ok=True)
    quick = "-quick" if args.quick else ""  # a smoke run leaves the full run's results
    out = RESULTS / f"growth-{args.database}{quick}.json"
    out.write_text(json.dumps({"database": args.database, "sizes": table}, indent=2) + "\n")
    print(f"\nwritten to {out.relative_to(ROOT)}")
    for figure in table[small]:
        if figure.endswith(" ms") and not figure.startswith("(before)"):
            emit(
                "growth",
                f"{figure[:-3]} at {large} ({args.database})",
                table[large][figure],
                table[small][figure],
                unit="ms",
                better="lower",
                baseline_what=f"the same at {small}",
            )
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
