from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest
import tantivy

from storage.search import embedded, tantivy_store
from storage.search.base import SearchDocument, SearchFilters
from storage.search.embedded import EmbeddedSearchIndex
from storage.search.errors import SearchError, SearchIndexLockedError, SearchSchemaError


def doc(doc_id: str, text: str, session: str = "s1") -> SearchDocument:
    return SearchDocument(id=doc_id, kind="message", text=text, session_id=session)


async def test_index_survives_close_and_reopen_with_same_results(tmp_path: Path) -> None:
    first = EmbeddedSearchIndex(tmp_path / "idx")
    await first.upsert([doc("a", "服务器大量重连"), doc("b", "重连成功", "s2"), doc("c", "天气")])
    before = [(h.id, h.score) for h in await first.search("重连")]
    await first.close()

    reopened = EmbeddedSearchIndex(tmp_path / "idx")
    after = [(h.id, h.score) for h in await reopened.search("重连")]
    filtered = [h.id for h in await reopened.search("重连", SearchFilters(session_ids=["s2"]))]
    await reopened.close()
    assert after == before and len(after) == 2
    assert filtered == ["b"]


async def test_second_writer_on_same_directory_gets_a_clear_error(tmp_path: Path) -> None:
    owner = EmbeddedSearchIndex(tmp_path / "idx")
    await owner.upsert([doc("a", "部署")])
    intruder = EmbeddedSearchIndex(tmp_path / "idx")
    with pytest.raises(SearchIndexLockedError, match="another writer"):
        await intruder.upsert([doc("b", "部署")])
    # Reading alongside the writer is fine.
    assert [h.id for h in await intruder.search("部署")] == ["a"]
    await intruder.close()
    await owner.close()


async def test_writer_in_another_process_is_refused_while_reading_works(tmp_path: Path) -> None:
    owner = EmbeddedSearchIndex(tmp_path / "idx")
    await owner.upsert([doc("a", "部署")])
    script = textwrap.dedent(
        f"""
        import asyncio
        from pathlib import Path
        from storage.search.base import SearchDocument
        from storage.search.embedded import EmbeddedSearchIndex
        from storage.search.errors import SearchIndexLockedError
        from storage.search.tokenizer import configure_tokenizer

        async def main():
            configure_tokenizer(Path({str(tmp_path / "jieba")!r}))
            index = EmbeddedSearchIndex(Path({str(tmp_path / "idx")!r}))
            print("hits", [h.id for h in await index.search("部署")])
            try:
                await index.upsert([SearchDocument("b", "message", "部署")])
            except SearchIndexLockedError:
                print("locked")
            await index.close()

        asyncio.run(main())
        """
    )
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, stdout=asyncio.subprocess.PIPE
    )
    stdout, _ = await child.communicate()
    await owner.close()
    assert stdout.decode().splitlines()[:2] == ["hits ['a']", "locked"]


async def test_writer_lock_is_released_on_close(tmp_path: Path) -> None:
    first = EmbeddedSearchIndex(tmp_path / "idx")
    await first.upsert([doc("a", "部署")])
    await first.close()
    second = EmbeddedSearchIndex(tmp_path / "idx")
    await second.upsert([doc("b", "部署")])
    assert sorted(h.id for h in await second.search("部署")) == ["a", "b"]
    await second.close()


async def test_directory_with_another_schema_is_reported(tmp_path: Path) -> None:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("body", stored=True)
    tantivy.Index(builder.build(), path=str(tmp_path))
    index = EmbeddedSearchIndex(tmp_path)
    with pytest.raises(SearchSchemaError, match="reindex"):
        await index.search("anything")


async def test_search_after_close_raises(tmp_path: Path) -> None:
    index = EmbeddedSearchIndex(tmp_path / "idx")
    await index.upsert([doc("a", "部署")])
    await index.close()
    with pytest.raises(SearchError, match="closed"):
        await index.search("部署")


async def test_concurrent_upserts_and_searches_lose_nothing(tmp_path: Path) -> None:
    index = EmbeddedSearchIndex(tmp_path / "idx")

    async def write(n: int) -> None:
        await index.upsert([doc(f"m{n}-{i}", f"并发写入 batch{n} 第{i}条") for i in range(20)])

    async def read() -> None:
        for _ in range(5):
            await index.search("并发写入")

    await asyncio.gather(*(write(n) for n in range(5)), *(read() for _ in range(3)))
    hits = await index.search("并发写入", limit=1000)
    await index.close()
    assert len({h.id for h in hits}) == 100


async def test_documents_stored_before_payloads_were_arrays_still_make_hits(
    tmp_path: Path,
) -> None:
    """Indexes written before hold each payload as a JSON object; they read as they did."""
    index = EmbeddedSearchIndex(tmp_path / "idx")
    await index.upsert([doc("new", "部署 回滚")])
    old = tantivy_store.prepare(
        SearchDocument(id="old", kind="message", text="部署 成功", title="周报", scope="dm:x")
    )
    legacy = {
        "id": "old",
        "kind": "message",
        "title": "周报",
        "text": "部署 成功",
        "session_id": None,
        "source_id": None,
        "scope": "dm:x",
        "time": "2025-01-02T03:04:05+00:00",
    }
    stored = tantivy.Document()
    stored.add_text("id", "old")
    stored.add_text("scope", "dm:x")
    stored.add_text("tokens", old.tokens)
    stored.add_bytes("payload", json.dumps(legacy, ensure_ascii=False).encode())
    store = index._store
    with store._write_lock:
        writer = store._writer_locked()
        writer.add_document(stored)
        writer.commit()
        store._reload()

    hits = {h.id: h for h in await index.search("部署", limit=50)}
    await index.close()
    assert set(hits) == {"new", "old"}
    assert hits["old"].title == "周报" and hits["old"].scope == "dm:x"
    assert hits["old"].excerpts == ["部署 成功"]
    assert hits["old"].time == datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


async def test_filters_past_a_term_union_match_the_same_documents(tmp_path: Path) -> None:
    """A filter of up to MAX_TERM_UNION values is a union of term queries, a longer one a
    term set: the same documents and scores either way."""
    index = EmbeddedSearchIndex(tmp_path / "idx")
    await index.upsert([doc(f"d{n}", f"部署 第{n}次", f"s{n}") for n in range(80)])
    wanted = [f"s{n}" for n in range(0, 80, 2)]  # 40 Sessions: a union
    padded = wanted + [f"absent{n}" for n in range(tantivy_store.MAX_TERM_UNION)]  # a term set
    union = await index.search("部署", SearchFilters(session_ids=wanted), limit=100)
    term_set = await index.search("部署", SearchFilters(session_ids=padded), limit=100)
    await index.close()
    assert sorted(h.session_id or "" for h in union) == sorted(wanted)
    assert [(h.id, h.score) for h in term_set] == [(h.id, h.score) for h in union]


async def test_searches_on_the_loop_and_in_a_worker_thread_agree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small search runs on the event loop, a larger one in a worker thread; both see the
    same ranking."""
    index = EmbeddedSearchIndex(tmp_path / "idx")
    await index.upsert([doc(f"d{n}", "重连 " * (n % 5 + 1) + f"第{n}次") for n in range(40)])
    on_loop = await index.search("重连", limit=10)
    monkeypatch.setattr(embedded, "INLINE_MAX_HITS", 0)
    in_thread = await index.search("重连", limit=10)
    await index.close()
    assert len(on_loop) == 10
    assert [(h.id, h.score) for h in in_thread] == [(h.id, h.score) for h in on_loop]
