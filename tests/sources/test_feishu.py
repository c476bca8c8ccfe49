"""Feishu history against the Feishu fake: paged history and threads, a sync killed mid-way
resumes with no duplicates, a message seen by webhook and by sync is one record, rate limits
are waited out and counted, failures show as errors, calls are paced."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from datetime import timedelta
from typing import Any

from sqlalchemy import func, select

from bot.memory.source_index import SourceIndexer
from bot.sync.adapters import render_feishu
from bot.sync.status import load_status
from sources.base import NoProgress
from sources.feishu.history import FeishuHistory
from sources.feishu.transport import Pacer
from sources.runner import SyncRunner
from storage.db import Database
from storage.models import ApiUsage, Source, SourceRecord
from storage.repos import conversations
from storage.repos import sources as sources_repo
from storage.types import utcnow
from tests.fakes import FeishuFake, HistoryMessage, Mention
from tests.sources.conftest import feishu_api

DAY = 86400


def history_of(fake: FeishuFake, chat_id: str, n: int, *, start: float, tag: str) -> list[str]:
    messages = [
        HistoryMessage.text(
            f"{tag} message {i}", create_time=start + i * 30, sender_open_id=f"ou_{i % 3}"
        )
        for i in range(n)
    ]
    fake.add_history(chat_id, messages)
    return [m.message_id for m in messages]


async def stored(db: Database, source: str | None = None) -> list[SourceRecord]:
    async with db.read() as s:
        stmt = select(SourceRecord).order_by(SourceRecord.id)
        if source is not None:
            stmt = stmt.where(SourceRecord.source == source)
        return list((await s.scalars(stmt)).all())


async def source_row(db: Database, name: str) -> Source:
    async with db.read() as s:
        row = await s.scalar(select(Source).where(Source.name == name))
    assert row is not None, name
    return row


def list_calls(fake: FeishuFake, container_id: str) -> list[dict[str, str]]:
    return [
        r.query
        for r in fake.requests
        if r.path == "/open-apis/im/v1/messages"
        and r.method == "GET"
        and r.query.get("container_id") == container_id
    ]


async def test_paged_history_threads_and_direct_messages_are_synced_once(
    fake: FeishuFake, db: Database, history: FeishuHistory
) -> None:
    start = time.time() - DAY
    group_ids = history_of(fake, "oc_group", 120, start=start, tag="team")
    root = HistoryMessage.text("deploy plan?", create_time=start + 10, thread_id="omt_plan")
    replies = [
        HistoryMessage.text(f"reply {i}", create_time=start + 4000 + i, thread_id="omt_plan",
                            root_id=root.message_id, parent_id=root.message_id)
        for i in range(3)
    ]  # fmt: skip
    fake.add_history("oc_group", [root, *replies])
    fake.add_history(
        "oc_dm",
        [
            HistoryMessage.text(
                "@_user_1 hi", create_time=start + 5, mentions=[Mention("ou_bot", "Maka")]
            )
        ],
    )
    async with db.write() as s:  # the DM is known from ingest (Feishu lists no p2p chats)
        await conversations.get_or_create(
            s, platform="feishu", chat_id="oc_dm", chat_type="p2p", peer_open_id="ou_user"
        )

    runner = SyncRunner(db, {"feishu": history}, "test")
    results = await runner.sync_kind("feishu")
    assert all(r.ok for r in results), results
    group = await stored(db, "feishu:oc_group")
    assert len(group) == 124
    assert {r.external_id for r in group} >= set(group_ids)
    assert all(r.scope == "group:oc_group" for r in group)
    thread = [r for r in group if r.thread_key == "omt_plan"]
    assert sorted(r.text for r in thread) == ["deploy plan?", "reply 0", "reply 1", "reply 2"]
    [dm] = await stored(db, "feishu:oc_dm")
    assert dm.scope == "dm:ou_user" and dm.text == "@Maka hi" and dm.payload["origin"] == "history"
    # 121 top-level messages in pages of 50, the thread in one page
    assert len(list_calls(fake, "oc_group")) == 3 and len(list_calls(fake, "omt_plan")) == 1
    cursor = (await source_row(db, "feishu:oc_group")).synced_cursor or {}
    assert "pending" not in cursor and cursor["threads"] == {"omt_plan": replies[-1].create_time_ms}
    assert (await source_row(db, "feishu:oc_group")).record_count == 124
    assert (await source_row(db, "feishu")).observed_cursor["groups"] == 1  # type: ignore[index]

    # Later: a new message, and a new reply in the old thread (its root is long covered).
    fake.add_history("oc_group", [HistoryMessage.text("fresh news", create_time=time.time())])
    fake.add_history(
        "oc_group",
        [HistoryMessage.text("late reply", create_time=time.time(), thread_id="omt_plan",
                             root_id=root.message_id, parent_id=root.message_id)],
    )  # fmt: skip
    [_, group_run, dm_run] = await runner.sync_kind("feishu")
    assert group_run.new == 2 and dm_run.new == 0
    assert len(await stored(db, "feishu:oc_group")) == 126


class KillAfter(NoProgress):
    def __init__(self, pages: int) -> None:
        self.pages, self.seen = pages, 0
        self.reached = asyncio.Event()

    def advanced(self, source: str, *, seen: int, new: int, total: int | None) -> None:
        self.seen += 1
        if self.seen >= self.pages:
            self.reached.set()


async def test_a_sync_killed_midway_resumes_where_it_stopped_with_no_duplicates(
    fake: FeishuFake, db: Database, history: FeishuHistory
) -> None:
    ids = history_of(fake, "oc_group", 260, start=time.time() - DAY, tag="long")
    killed = SyncRunner(db, {"feishu": history}, "killed", lease=timedelta(seconds=1))
    progress = KillAfter(pages=2)
    task = asyncio.create_task(killed.sync_kind("feishu", progress=progress))
    await asyncio.wait_for(progress.reached.wait(), 20)
    task.cancel()  # the process dies: no cleanup, its lease just lapses
    with contextlib.suppress(asyncio.CancelledError):
        await task
    partial = await stored(db)
    cursor = (await source_row(db, "feishu:oc_group")).synced_cursor or {}
    assert 100 <= len(partial) < 260
    assert cursor["pending"]["page_token"]
    calls_before = len(list_calls(fake, "oc_group"))

    await asyncio.sleep(1.2)  # the dead process's lease expires
    survivor = SyncRunner(db, {"feishu": history}, "survivor")
    results = await survivor.sync_kind("feishu")
    assert all(r.ok for r in results), results
    records = await stored(db)
    assert len(records) == 260 and {r.external_id for r in records} == set(ids)
    resumed = list_calls(fake, "oc_group")[calls_before:]
    assert resumed[0].get("page_token")  # continued from the committed page, not the start
    # the remaining pages of the interrupted range, then one look at the last minute
    assert len(resumed) == (6 - len(partial) // 50) + 1
    assert (await source_row(db, "feishu:oc_group")).record_count == 260


async def test_a_page_token_feishu_no_longer_accepts_resumes_by_time(
    fake: FeishuFake, db: Database, history: FeishuHistory
) -> None:
    start = time.time() - DAY
    history_of(fake, "oc_group", 120, start=start, tag="old")
    runner = SyncRunner(db, {"feishu": history}, "t")
    await runner.sync_kind("feishu")
    last_ms = fake.history("oc_group")[60].create_time_ms
    async with db.write() as s:  # as if a sync had stopped mid-range long ago
        row = await sources_repo.get(s, "feishu:oc_group")
        assert row is not None
        row.synced_cursor = {
            "pending": {
                "range": [0, int(start) + 7200],
                "page_token": "expired",
                "last_ms": last_ms,
            }
        }
    calls = len(list_calls(fake, "oc_group"))
    [_, unit] = await runner.sync_kind("feishu")
    assert unit.error is None and unit.new == 0
    resumed = list_calls(fake, "oc_group")[calls:]
    assert resumed[0]["page_token"] == "expired"  # refused (field validation), then by time:
    assert resumed[1]["start_time"] == str(last_ms // 1000) and "page_token" not in resumed[1]
    cursor = (await source_row(db, "feishu:oc_group")).synced_cursor or {}
    assert cursor["covered"][0] == 0 and "pending" not in cursor
    assert len(await stored(db)) == 120


async def test_rate_limits_are_waited_out_and_every_call_is_counted(
    fake: FeishuFake, db: Database, history: FeishuHistory
) -> None:
    history_of(fake, "oc_group", 60, start=time.time() - DAY, tag="busy")
    fake.rate_limit_next("/open-apis/im/v1/messages", times=1, reset_seconds=1)
    results = await SyncRunner(db, {"feishu": history}, "t").sync_kind("feishu")
    assert all(r.ok for r in results), results
    assert len(await stored(db)) == 60
    assert history.on_close is not None
    await history.on_close()  # the counts land within a second; closing writes them now
    async with db.read() as s:
        counted = dict(
            (
                await s.execute(
                    select(ApiUsage.api, func.sum(ApiUsage.calls)).group_by(ApiUsage.api)
                )
            ).all()
        )
    assert counted["im.message.list"] == 3  # two pages, one of them twice (429 then 200)
    assert counted["im.chat.list"] == 1


async def test_a_dropped_connection_is_retried_and_nothing_is_stored_twice(
    fake: FeishuFake, db: Database, history: FeishuHistory
) -> None:
    history_of(fake, "oc_group", 70, start=time.time() - DAY, tag="flaky")
    fake.drop_response_after_commit("/open-apis/im/v1/messages", method="GET")
    results = await SyncRunner(db, {"feishu": history}, "t").sync_kind("feishu")
    assert all(r.ok for r in results), results
    assert len(await stored(db)) == 70
    assert len(list_calls(fake, "oc_group")) == 3  # the dropped page was asked again


async def test_failures_show_as_errors_never_as_no_changes(
    fake: FeishuFake, db: Database, history: FeishuHistory
) -> None:
    history_of(fake, "oc_group", 5, start=time.time() - DAY, tag="x")
    runner = SyncRunner(db, {"feishu": history}, "t")
    assert all(r.ok for r in await runner.sync_kind("feishu"))

    fake.fail_next("/open-apis/im/v1/chats", http_status=400, code=99991672, msg="no permission")
    [observed] = await runner.sync_kind("feishu")
    assert observed.error and "99991672" in observed.error
    statuses = {s.name: s for s in await load_status(db)}
    assert statuses["feishu"].state == "error"
    assert statuses["feishu:oc_group"].state == "error"
    assert "observation failed" in (statuses["feishu:oc_group"].last_error or "")

    fake.fail_next("/open-apis/im/v1/messages", http_status=400, code=230002, msg="bot left")
    [observed, unit] = await runner.sync_kind("feishu")
    assert observed.ok and unit.error and "230002" in unit.error
    statuses = {s.name: s for s in await load_status(db)}
    assert statuses["feishu"].state == "ok" and statuses["feishu:oc_group"].state == "error"

    assert all(r.ok for r in await runner.sync_kind("feishu"))  # it recovers, and says so
    statuses = {s.name: s for s in await load_status(db)}
    assert statuses["feishu:oc_group"].state == "ok" and statuses["feishu:oc_group"].records == 5


async def test_a_source_is_synced_by_one_process_at_a_time(
    fake: FeishuFake, db: Database, history: FeishuHistory
) -> None:
    history_of(fake, "oc_group", 20, start=time.time() - DAY, tag="shared")
    runner = SyncRunner(db, {"feishu": history}, "this-process")
    await runner.sync_kind("feishu")
    async with db.write() as s:  # another replica is syncing the chat right now
        assert await sources_repo.claim_named(
            s, "feishu:oc_group", owner="other-replica", now=utcnow(), lease=timedelta(minutes=1)
        )
        await sources_repo.request_sync(s, ["feishu:oc_group"], utcnow())
    [_, unit] = await runner.sync_kind("feishu")
    assert unit.skipped == "being synced by other-replica"
    assert not await runner.run_next()  # the worker's path does not take it either
    async with db.write() as s:
        await sources_repo.release(s, "other-replica")
    assert await runner.run_next()
    assert (await source_row(db, "feishu:oc_group")).wanted_at is None


async def test_calls_are_paced_four_at_a_time_and_250ms_apart() -> None:
    pacer = Pacer()
    starts: list[float] = []
    running = peak = 0

    async def call() -> None:
        nonlocal running, peak
        async with pacer.slot():
            starts.append(time.monotonic())
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(1.2)
            running -= 1

    await asyncio.gather(*(call() for _ in range(6)))
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= 0.24 and peak == 4


async def test_synced_messages_are_searchable_with_their_scope_and_rebuild_restores_them(
    fake: FeishuFake, db: Database, history: FeishuHistory, tmp_path: Any
) -> None:
    from bot.memory.search import SearchService
    from storage.search.embedded import EmbeddedSearchIndex

    fake.add_history(
        "oc_group",
        [HistoryMessage.text("部署后出现大量重连 ERR_CONN_RESET", create_time=time.time() - 60)],
    )
    search = SearchService(EmbeddedSearchIndex(tmp_path / "index"))
    indexer = SourceIndexer(db, search)
    try:
        runner = SyncRunner(db, {"feishu": history}, "t", on_records=indexer.after_commit)
        await runner.sync_kind("feishu")
        await indexer.flush()
        [hit] = await search.search("重连")
        assert (hit.kind, hit.scope, hit.source_id, hit.title) == (
            "source_message",
            "group:oc_group",
            "feishu:oc_group",
            "team",
        )
        await search.index.clear()
        assert await search.search("ERR_CONN_RESET") == []
        assert await indexer.rebuild() == 1
        assert len(await search.search("ERR_CONN_RESET")) == 1
    finally:
        await indexer.close()
        await search.close()


async def test_history_pacing_defaults(fake: FeishuFake, db: Database) -> None:
    """The production adapter paces calls (no override): two pages take >= 250 ms."""
    history_of(fake, "oc_group", 60, start=time.time() - DAY, tag="paced")
    adapter = FeishuHistory(feishu_api(fake, db), db, render=render_feishu)
    try:
        began = time.monotonic()
        results = await SyncRunner(db, {"feishu": adapter}, "t").sync_kind("feishu")
        assert all(r.ok for r in results)
        assert time.monotonic() - began >= 0.5  # chat list + 2 pages, 250 ms apart
    finally:
        await adapter.aclose()


async def test_maka_sync_feishu_for_one_chat_then_status(
    fake: FeishuFake, db: Database, database_url: str, tmp_path: Any
) -> None:
    import io

    from bot.sync.cli import run_sync_now, run_sync_status
    from tests.apps import make_settings

    history_of(fake, "oc_group", 30, start=time.time() - DAY, tag="cli")
    fake.add_chat("oc_other", name="other")
    history_of(fake, "oc_other", 5, start=time.time() - DAY, tag="not asked")
    app_id, app_secret = fake.new_app()
    settings = make_settings(
        tmp_path, database_url, feishu_app_id=app_id, feishu_app_secret=app_secret,
        feishu_verification_token="t", feishu_domain=fake.url,
    )  # fmt: skip
    out, bar = io.StringIO(), io.StringIO()
    assert await run_sync_now(settings, "feishu", chats=["oc_group"], out=out, progress_to=bar) == 0
    assert "feishu:oc_group: 30 read, 30 new" in out.getvalue()
    assert "done: 30 new records from 1 sources" in out.getvalue()
    assert "feishu: 1 to sync" in bar.getvalue()
    assert {r.source for r in await stored(db)} == {"feishu:oc_group"}
    table = io.StringIO()
    assert await run_sync_status(settings, out=table) == 0
    lines = {line.split()[0]: line.split() for line in table.getvalue().splitlines()[2:] if line}
    assert lines["feishu:oc_group"][1:3] == ["group:oc_group", "30"]
    assert lines["feishu:oc_group"][-1] == "ok"
    assert lines["feishu:oc_other"][-2:] == ["never", "synced"]  # observed only: not "ok"
