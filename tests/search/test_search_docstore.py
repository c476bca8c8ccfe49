"""The embedded index's document store is written in 4 KB blocks (each hit decompresses one
block): a new index's at once, an index created before with tantivy's 16 KB from its next
open, with every document it held still found; one another process writes to is left as
it is."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import tantivy

from storage.search.base import SearchDocument, SearchFilters
from storage.search.embedded import EmbeddedSearchIndex
from storage.search.tantivy_open import DOCSTORE_BLOCK_BYTES, docstore_block_bytes
from storage.search.tantivy_store import TantivyStore, build_schema, prepare

TANTIVY_DEFAULT_BLOCK_BYTES = 16384


def message(n: int) -> SearchDocument:
    return SearchDocument(
        id=f"m{n}", kind="source_message", text=f"第{n}条 部署 回滚", title="项目群", scope="g"
    )


async def test_a_new_index_writes_small_docstore_blocks_and_reads_them_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="storage.search.tantivy_open")
    index = EmbeddedSearchIndex(tmp_path / "idx")
    await index.upsert([message(n) for n in range(300)])
    await index.close()

    reopened = EmbeddedSearchIndex(tmp_path / "idx")
    hits = await reopened.search("部署", SearchFilters(scopes=["g"]), limit=300)
    await reopened.close()
    assert docstore_block_bytes(tmp_path / "idx") == DOCSTORE_BLOCK_BYTES
    assert len(hits) == 300
    assert {h.title for h in hits} == {"项目群"}
    assert all(h.excerpts == [f"第{h.id[1:]}条 部署 回滚"] for h in hits)
    assert "maka search rebuild" not in caplog.text  # nothing to rebuild in a new index


async def test_an_index_created_before_gets_small_blocks_and_keeps_its_documents(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="storage.search.tantivy_open")
    created = tantivy.Index(build_schema(), path=str(tmp_path))  # as tantivy-py creates it
    writer = created.writer(heap_size=15_000_000, num_threads=1)
    for n in range(50):
        writer.add_document(TantivyStore._to_tantivy(prepare(message(n))))
    writer.commit()
    writer.wait_merging_threads()
    assert docstore_block_bytes(tmp_path) == TANTIVY_DEFAULT_BLOCK_BYTES

    index = EmbeddedSearchIndex(tmp_path)
    await index.upsert([message(n) for n in range(50, 60)])
    hits = await index.search("回滚", limit=100)
    await index.close()
    assert docstore_block_bytes(tmp_path) == DOCSTORE_BLOCK_BYTES
    assert sorted(h.id for h in hits) == sorted(f"m{n}" for n in range(60))
    assert "until `maka search rebuild`" in caplog.text  # the operator hears how to finish it


async def test_an_index_another_process_writes_to_is_left_as_it_is(tmp_path: Path) -> None:
    other = tantivy.Index(build_schema(), path=str(tmp_path))
    writer = other.writer(heap_size=15_000_000, num_threads=1)  # holds the directory's lock
    writer.add_document(TantivyStore._to_tantivy(prepare(message(1))))
    writer.commit()
    try:
        index = EmbeddedSearchIndex(tmp_path)
        hits = await index.search("部署")
        await index.close()
    finally:
        writer.wait_merging_threads()
    assert docstore_block_bytes(tmp_path) == TANTIVY_DEFAULT_BLOCK_BYTES
    assert [h.id for h in hits] == ["m1"]
