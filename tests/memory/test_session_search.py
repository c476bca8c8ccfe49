"""Session logs are searchable as they are written, within what each chat may see."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from bot.host.notify import Notifier
from bot.host.workers import Host
from bot.llm.scripted import ScriptedProvider
from bot.memory.search import SearchService
from bot.memory.session_index import INDEX_SOURCE, SessionIndexer, SessionIndexWorker
from storage.db import Database, create_database
from storage.models import Session
from storage.repos import sessions
from storage.repos import sources as source_repo
from storage.search import SearchDocument, SearchError, SearchFilters, SearchHit
from storage.types import utcnow
from tests.assistant.support import all_delivered, bot_world, replies, say, say_in_group, send
from tests.assistant.support import sleep as sleep_step
from tests.feishu_world import WorldFactory
from tests.seed import owner_dm, task_session
from tests.waiting import wait_until

MAKA = [sys.executable, "-m", "bot.cli.main"]


class BrokenIndex:
    async def upsert(self, docs: object) -> None:
        raise SearchError("disk on fire")

    async def delete(self, ids: object) -> None:
        raise SearchError("disk on fire")

    async def search(self, query: str, filters: object = None, limit: int = 10) -> list[SearchHit]:
        raise SearchError("disk on fire")

    async def clear(self) -> None:
        raise SearchError("disk on fire")

    async def close(self) -> None:
        pass

    async def health(self) -> None:
        raise SearchError("disk on fire")


async def test_a_turn_is_searchable_by_session_right_after_it_is_written(
    make_world: WorldFactory,
) -> None:
    provider = ScriptedProvider(
        [send("send_user", {"text": "已处理 ERR_CONN_RESET 的告警"}), sleep_step]
    )
    async with bot_world(make_world, provider) as w:
        await say(w, "部署后出现大量重连，见 src/server/ws.ts")
        await replies(w, 1)
        search = w.app.services.search

        async def indexed() -> bool:  # indexing follows the turn's commit
            return bool(await search.search("ERR_CONN_RESET"))

        await wait_until(indexed)
        session_kinds = SearchFilters(kinds=["session_user", "session_assistant"])
        user_hits = await search.search("重连", session_kinds)
        reply_hits = await search.search("ERR_CONN_RESET", session_kinds)
        path_hits = await search.search("ws.ts", session_kinds)
    assert [h.kind for h in user_hits] == ["session_user"]
    assert [h.kind for h in reply_hits] == ["session_assistant"]
    assert path_hits and path_hits[0].session_id == user_hits[0].session_id
    assert user_hits[0].scope == "dm:ou_owner"
    assert all(0.0 <= h.score <= 1.0 for h in user_hits + reply_hits)


async def test_a_broken_search_backend_gives_no_evidence_and_is_counted() -> None:
    before = REGISTRY.get_sample_value("maka_search_errors_total", {"operation": "search"}) or 0
    service = SearchService(BrokenIndex())
    assert await service.search("anything") == []
    assert not await service.upsert([SearchDocument(id="x", kind="k", text="t")])
    assert await service.health() is not None
    after = REGISTRY.get_sample_value("maka_search_errors_total", {"operation": "search"})
    assert after == before + 1


async def test_the_bot_still_answers_when_search_is_down(make_world: WorldFactory) -> None:
    provider = ScriptedProvider([send("send_user", {"text": "still here"}), sleep_step])
    async with bot_world(make_world, provider) as w:
        w.app.services.search.index = BrokenIndex()
        await say(w, "hello?")
        assert await replies(w, 1) == ["still here"]
        await all_delivered(w)


async def test_search_command_in_a_group_sees_only_that_group(make_world: WorldFactory) -> None:
    provider = ScriptedProvider(
        [
            send("send_user", {"text": "noted"}),
            sleep_step,
            send("send_user", {"text": "noted too"}),
            sleep_step,
        ]
    )
    async with bot_world(make_world, provider, admins=["ou_member"]) as w:
        await say(w, "私事：体检报告在周五")  # the owner's DM
        await replies(w, 1)
        await say_in_group(w, "团队周五发布")
        await replies(w, 2)

        async def indexed() -> bool:  # both messages, not just two hits of the first
            hits = await w.app.services.search.search("周五")
            found = " ".join(e for h in hits for e in h.excerpts)
            return "团队周五发布" in found and "体检" in found

        await wait_until(indexed)
        await say_in_group(w, "/search 周五")
        group_answer = (await replies(w, 3))[2]
        await say(w, "/search 周五")
        owner_answer = (await replies(w, 4))[3]
    assert "团队周五发布" in group_answer and "体检" not in group_answer
    assert "体检报告" in owner_answer and "团队周五发布" in owner_answer


async def _cli(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        *MAKA, *args, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return proc.returncode, out.decode() + err.decode()


async def test_tokenize_prints_the_tokens_operators_need(tmp_path: Path) -> None:
    env = {**os.environ, "MAKA_DATA_DIR": str(tmp_path)}
    code, out = await _cli(["tokenize", "getUserName 报 ERR_CONN_RESET"], env)
    assert code == 0
    tokens = out.strip().splitlines()[-1].split(" ")
    for expected in ("getusername", "user", "err_conn_reset", "conn", "reset"):
        assert expected in tokens


async def test_search_rebuild_restores_the_index_from_the_database(
    tmp_path: Path, database_url: str
) -> None:
    db = create_database(database_url)
    async with db.write() as s:
        session = Session(
            name="ops chat", state="active", labels=[], is_archived=False, created_at=utcnow()
        )
        s.add(session)
        await s.flush()
        await sessions.append_events(
            s,
            session.id,
            [("user", "getUserName 返回空", None), ("tool_result", "raw", None)],
            utcnow(),
        )
    await db.dispose()
    env = {**os.environ, "MAKA_DATA_DIR": str(tmp_path), "MAKA_DATABASE_URL": database_url}
    code, out = await _cli(["search", "rebuild"], env)
    assert (
        code == 0 and "indexed 1 session messages, 0 source records and 0 Session digests" in out
    ), out
    code, out = await _cli(["search", "getUserName", "--json"], env)
    assert code == 0, out
    hits = json.loads(out[out.index("[") :])
    assert [h["kind"] for h in hits] == ["session_user"]
    code, out = await _cli(["search", "getUserName", "--session", "999999", "--json"], env)
    assert json.loads(out[out.index("[") :]) == []


async def test_a_follower_whose_backend_always_refuses_backs_off_and_logs_a_line_a_try(
    db: Database, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The search follower keeps its rows (they are retried, never skipped), so a backend
    that refuses them is waited out: each try after a backoff that grows with the failures,
    the error on its checkpoint row, and one log line a try (the traceback once)."""
    async with db.write() as s:
        task = await task_session(s, await owner_dm(s), "export")
        await sessions.append_events(s, task.id, [("user", "it took 14 minutes", None)], utcnow())
    worker = SessionIndexWorker(db, SessionIndexer(db, SearchService(BrokenIndex())), "me")
    host = Host(db, Notifier(), poll_interval=0.05)
    host.add(worker)
    backoffs: list[int] = []

    async def back_off(_worker: object, failures: int) -> None:
        backoffs.append(failures)  # counted, not waited: the test decides when time passes
        await asyncio.sleep(0)

    monkeypatch.setattr(host, "_back_off", back_off)
    caplog.set_level(logging.WARNING, logger="bot.host.workers")
    await host.start()

    async def four_tries() -> bool:
        return len(backoffs) >= 4

    await wait_until(four_tries, what="four failed tries of the follower")
    await host.stop(grace=1)
    assert backoffs[:4] == [1, 2, 3, 4]
    records = [r for r in caplog.records if r.name == "bot.host.workers"]
    assert len(records) == len(backoffs)  # one line a try
    assert [bool(r.exc_info) for r in records].count(True) == 1
    async with db.read() as s:
        checkpoint = await source_repo.get(s, INDEX_SOURCE)
    assert checkpoint is not None and "refused 1 session events" in (checkpoint.last_error or "")
