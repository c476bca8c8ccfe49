from __future__ import annotations

import asyncio
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from storage.search.base import SearchDocument
from storage.search.embedded import EmbeddedSearchIndex
from storage.search.scoring import bm25_ceiling, idf, normalize


def test_idf_matches_tantivy_formula() -> None:
    # tantivy's Explanation for n=5, N=10 reports idf 0.6931472.
    assert abs(idf(5, 10) - 0.6931472) < 1e-6


def test_unknown_query_tokens_lower_the_ceiling_share() -> None:
    known_only = bm25_ceiling(100, [3])
    with_unknown = bm25_ceiling(100, [3, 0])
    assert with_unknown > known_only


@given(
    a=st.floats(min_value=0, max_value=1e6, allow_nan=False),
    b=st.floats(min_value=0, max_value=1e6, allow_nan=False),
    ceiling=st.floats(min_value=1e-6, max_value=1e6, allow_nan=False),
)
def test_normalize_is_monotonic_and_bounded(a: float, b: float, ceiling: float) -> None:
    low, high = sorted((a, b))
    assert 0.0 <= normalize(low, ceiling) <= normalize(high, ceiling) <= 1.0


async def test_embedded_score_stays_below_one_after_deletes(tmp_path: Path) -> None:
    # Deleted documents still count in tantivy's N until a merge. A ceiling computed from
    # the live count instead would be far too low here, and the score would hit the cap of 1.
    index = EmbeddedSearchIndex(tmp_path / "idx")
    # One batch, one segment: tantivy drops a segment outright once all of it is deleted.
    others = [SearchDocument(f"d{i}", "message", f"天气 很好 第{i}条") for i in range(200)]
    await index.upsert([*others, SearchDocument("hit", "message", "重连 " * 20)])
    await index.delete([f"d{i}" for i in range(200)])
    (hit,) = await index.search("重连")
    await index.close()
    assert 0.5 < hit.score < 1.0


def test_more_occurrences_score_higher(tmp_path: Path) -> None:
    async def run() -> tuple[float, float]:
        index = EmbeddedSearchIndex(tmp_path / "idx2")
        await index.upsert(
            [
                SearchDocument("once", "message", "部署 日志 缓存 权限"),
                SearchDocument("thrice", "message", "部署 部署 部署 缓存"),
                SearchDocument("other", "message", "天气 很好"),
            ]
        )
        hits = {h.id: h.score for h in await index.search("部署")}
        await index.close()
        return hits["once"], hits["thrice"]

    once, thrice = asyncio.run(run())
    assert 0.0 < once < thrice < 1.0
