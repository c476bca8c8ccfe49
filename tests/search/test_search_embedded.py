from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path

import pytest
import tantivy

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
