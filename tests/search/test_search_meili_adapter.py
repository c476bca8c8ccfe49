"""Meilisearch-specific behaviour of the adapter: ids, chunks, settings, tasks, errors."""

from __future__ import annotations

import re
import socket

import meilisearch
import pytest

from storage.search.base import SearchDocument
from storage.search.errors import (
    SearchRequestError,
    SearchTaskFailedError,
    SearchTimeoutError,
    SearchUnavailableError,
)
from storage.search.meili import MeiliSearchIndex
from storage.search.meili_documents import doc_key
from tests.search.support import MeiliTarget

_MEILI_ID = re.compile(r"[A-Za-z0-9_-]{1,511}")


def doc(doc_id: str, text: str) -> SearchDocument:
    return SearchDocument(id=doc_id, kind="log", text=text, session_id="s1")


def stored_chunks(target: MeiliTarget, doc_id: str) -> list[dict[str, object]]:
    """The chunks the server holds for one document, read through the documents API."""
    client = meilisearch.Client(target.url, target.key)
    result = client.index(target.uid).get_documents(
        {"filter": f'doc_key = "{doc_key(doc_id)}"', "limit": 1000, "fields": ["pk", "text"]}
    )
    return [dict(d) for d in result.results]


def long_log(words: int, needle: str, at: int) -> str:
    body = [f"line{i % 97} ok" if i % 2 else "重试" for i in range(words)]
    body[at] = needle
    return " ".join(body)


async def test_arbitrary_ids_are_hashed_into_the_allowed_alphabet(target: MeiliTarget) -> None:
    index = target.index()
    weird = ["a b/c?d", "飞书:消息#1", "x" * 1000, "", "-", "'\"\\"]
    await index.upsert([doc(i, f"告警 {n}") for n, i in enumerate(weird) if i])
    hits = await index.search("告警", limit=50)
    assert sorted(h.id for h in hits) == sorted(i for i in weird if i)
    for doc_id in weird[:3]:
        (chunk,) = stored_chunks(target, doc_id)
        assert _MEILI_ID.fullmatch(str(chunk["pk"]))


async def test_hundred_thousand_word_text_is_chunked_and_still_found(
    target: MeiliTarget,
) -> None:
    index = target.index()
    text = long_log(100_000, "NEEDLE_IN_LOG", at=97_531)
    await index.upsert([doc("big", text), doc("small", "重试 line1 ok")])
    chunks = stored_chunks(target, "big")
    assert len(chunks) >= 50
    assert all(len(str(c["text"]).split()) <= 2_000 for c in chunks)
    hits = await index.search("NEEDLE_IN_LOG")
    assert [h.id for h in hits] == ["big"]
    assert "NEEDLE_IN_LOG" in hits[0].excerpts[0]


async def test_chunk_hits_merge_into_one_hit_per_document(target: MeiliTarget) -> None:
    index = target.index()
    await index.upsert([doc("big", long_log(10_000, "重试", at=5))])
    hits = await index.search("重试", limit=20)
    assert [h.id for h in hits] == ["big"]


async def test_reupsert_of_shorter_text_drops_stale_chunks(target: MeiliTarget) -> None:
    index = target.index()
    await index.upsert([doc("big", long_log(10_000, "OLD_MARKER", at=9_000))])
    assert len(stored_chunks(target, "big")) > 1
    await index.upsert([doc("big", "now short NEW_MARKER")])
    assert len(stored_chunks(target, "big")) == 1
    assert await index.search("OLD_MARKER") == []
    assert [h.id for h in await index.search("NEW_MARKER")] == ["big"]


async def test_delete_removes_every_chunk(target: MeiliTarget) -> None:
    index = target.index()
    await index.upsert([doc("big", long_log(10_000, "x", at=0)), doc("keep", "重试")])
    await index.delete(["big"])
    assert stored_chunks(target, "big") == []
    assert [h.id for h in await index.search("重试")] == ["keep"]


async def test_settings_are_applied_once_when_unchanged(target: MeiliTarget) -> None:
    await target.index().ensure_ready()
    await target.index().ensure_ready()
    client = meilisearch.Client(target.url, target.key)
    tasks = client.get_tasks({"indexUids": [target.uid], "types": ["settingsUpdate"]})
    assert len(tasks.results) == 1
    settings = client.index(target.uid).get_settings()
    assert settings["distinctAttribute"] == "doc_key"
    assert "session_id" in settings["filterableAttributes"][0]["attributePatterns"]


async def test_settings_changed_behind_our_back_are_restored(target: MeiliTarget) -> None:
    await target.index().ensure_ready()
    client = meilisearch.Client(target.url, target.key)
    task = client.index(target.uid).update_settings({"distinctAttribute": None})
    client.wait_for_task(task.task_uid)
    await target.index().ensure_ready()
    assert client.index(target.uid).get_settings()["distinctAttribute"] == "doc_key"


async def test_wrong_api_key_is_reported_as_such(target: MeiliTarget) -> None:
    if target.fake is None and target.key is None:
        pytest.skip("the real server runs without a master key")
    index = MeiliSearchIndex(target.url, "not-the-key", target.uid)
    with pytest.raises(SearchRequestError) as raised:
        await index.health()
    assert raised.value.code == "invalid_api_key"


async def test_unreachable_server_raises_unavailable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connection refused
        index = MeiliSearchIndex(f"http://127.0.0.1:{port}", None)
        with pytest.raises(SearchUnavailableError, match="cannot reach"):
            await index.search("anything")


async def test_task_that_never_finishes_times_out_with_a_clear_error(
    target: MeiliTarget,
) -> None:
    if target.fake is None:
        pytest.skip("needs the fake to hold tasks back")
    index = target.index(task_timeout=0.2)
    await index.ensure_ready()
    target.fake.pause_tasks()
    try:
        with pytest.raises(SearchTimeoutError, match=r"still (enqueued|processing) after 0.2s"):
            await index.upsert([doc("a", "部署")])
    finally:
        target.fake.resume_tasks()
    # The write was only late, not lost: it lands once the server catches up.
    assert [h.id for h in await index.search("部署")] == ["a"]


async def test_failed_task_raises_with_the_server_error(target: MeiliTarget) -> None:
    if target.fake is None:
        pytest.skip("needs the fake to inject a failure")
    index = target.index()
    await index.ensure_ready()
    target.fake.fail_next_task("internal", "disk on fire")
    with pytest.raises(SearchTaskFailedError, match="disk on fire") as raised:
        await index.upsert([doc("a", "部署")])
    assert raised.value.code == "internal"
    # The failed add left nothing behind, and nothing older was deleted for it.
    assert await index.search("部署") == []


@pytest.fixture
def target(meili_target: MeiliTarget) -> MeiliTarget:
    return meili_target
