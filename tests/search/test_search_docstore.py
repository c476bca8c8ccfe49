"""The embedded index's document store: new indexes write 4 KB blocks (each hit decompresses
one block), indexes created before keep tantivy's 16 KB and read as they did."""

from __future__ import annotations

from pathlib import Path

import tantivy

from storage.search.base import SearchDocument, SearchFilters
from storage.search.embedded import EmbeddedSearchIndex
from storage.search.tantivy_open import DOCSTORE_BLOCK_BYTES, docstore_block_bytes
from storage.search.tantivy_store import build_schema

TANTIVY_DEFAULT_BLOCK_BYTES = 16384


def message(n: int) -> SearchDocument:
    return SearchDocument(
        id=f"m{n}", kind="source_message", text=f"第{n}条 部署 回滚", title="项目群", scope="g"
    )


async def test_a_new_index_writes_small_docstore_blocks_and_reads_them_back(
    tmp_path: Path,
) -> None:
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


async def test_an_index_created_before_keeps_its_blocks_and_its_documents(
    tmp_path: Path,
) -> None:
    tantivy.Index(build_schema(), path=str(tmp_path))  # as tantivy-py creates it
    assert docstore_block_bytes(tmp_path) == TANTIVY_DEFAULT_BLOCK_BYTES

    index = EmbeddedSearchIndex(tmp_path)
    await index.upsert([message(n) for n in range(50)])
    hits = await index.search("回滚", limit=100)
    await index.close()
    assert docstore_block_bytes(tmp_path) == TANTIVY_DEFAULT_BLOCK_BYTES
    assert sorted(h.id for h in hits) == sorted(f"m{n}" for n in range(50))
