"""A very common word is weighed among recent documents only (storage/search/eras.py), so its
cost stays flat as history grows; rare words, old-only words and old documents are still
found. Constants are shrunk so a few dozen documents exercise every step."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from storage.search import tantivy_store
from storage.search.base import SearchDocument, SearchFilters
from storage.search.embedded import EmbeddedSearchIndex
from storage.search.eras import ERA_MARK, era_tokens, recent_window
from storage.search.tokenizer import tokenize

NOW = datetime.now(UTC)


@pytest.fixture(autouse=True)
def _small_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tantivy_store, "RARE_POSTINGS", 5)
    monkeypatch.setattr(tantivy_store, "WINDOW_DOCS", 10)
    monkeypatch.setattr(tantivy_store, "WIDENING", 4)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[tantivy_store.TantivyStore]:
    store = tantivy_store.TantivyStore(tmp_path / "idx", 48_000_000)
    yield store
    store.close()


def hourly(count: int, text: str = "launch plan {i}", first: int = 0) -> list[SearchDocument]:
    """`count` documents an hour apart, oldest first (the order that loses ties: tantivy
    keeps the lowest address among equal scores), id `h{i}` for the one `i` hours old."""
    return [
        SearchDocument(
            id=f"h{i}",
            kind="message",
            text=text.format(i=i),
            session_id=f"s{i % 2}",
            time=NOW - timedelta(hours=i, minutes=1),
        )
        for i in reversed(range(first, first + count))
    ]


def write(store: tantivy_store.TantivyStore, docs: list[SearchDocument]) -> None:
    store.upsert([tantivy_store.prepare(d) for d in docs])


def search(
    store: tantivy_store.TantivyStore, query: str, limit: int, **filters: list[str]
) -> list[str]:
    return [h.id for h in store.search(tokenize(query), dict(filters), limit)]


NEWEST_TEN = {f"h{i}" for i in range(10)}


def test_common_word_returns_the_newest_matches(store: tantivy_store.TantivyStore) -> None:
    write(store, hourly(60))
    found = search(store, "launch", 5)
    assert len(found) == 5 and set(found) <= NEWEST_TEN, found


def test_newer_documents_move_the_window_though_the_last_one_was_kept(
    store: tantivy_store.TantivyStore,
) -> None:
    write(store, hourly(60, first=10))  # h10..h69: the newest ten are h10..h19
    assert set(search(store, "launch", 5)) <= {f"h{i}" for i in range(10, 20)}
    write(store, hourly(10))  # h0..h9, newer than all of them
    found = search(store, "launch", 5)
    assert len(found) == 5 and set(found) <= NEWEST_TEN, found


def test_rare_word_in_an_old_document_is_found_next_to_a_common_one(
    store: tantivy_store.TantivyStore,
) -> None:
    write(store, hourly(1, "launch zebra", first=500) + hourly(60))
    found = search(store, "launch zebra", 5)
    assert found[0] == "h500", found
    assert set(found[1:]) <= NEWEST_TEN, found


@pytest.mark.parametrize(
    "age", [20, 200], ids=["inside-the-wider-window", "older-than-every-window"]
)
def test_word_common_only_in_old_history_is_still_found(
    store: tantivy_store.TantivyStore, age: int
) -> None:
    write(
        store, hourly(8, "legacy launch {i}", first=age) + hourly(age) + hourly(40, first=age + 8)
    )
    found = search(store, "legacy", 5)
    assert len(found) == 5 and all(age <= int(f[1:]) < age + 8 for f in found), found


def test_documents_indexed_before_era_tokens_are_found_by_widening(
    store: tantivy_store.TantivyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as old_prepare:
        old_prepare.setattr(tantivy_store, "era_tokens", lambda _when: [])
        write(store, hourly(20, first=100))
    write(store, hourly(30))
    found = search(store, "launch", 50)
    assert set(found) == {f"h{i}" for i in [*range(30), *range(100, 120)]}


def test_filters_still_apply_within_the_window(store: tantivy_store.TantivyStore) -> None:
    write(store, hourly(60))
    found = search(store, "launch", 3, session_id=["s1"])
    assert len(found) == 3 and set(found) <= NEWEST_TEN - {f"h{i}" for i in range(0, 10, 2)}


def test_document_a_little_in_the_future_is_in_the_window(
    store: tantivy_store.TantivyStore,
) -> None:
    ahead = NOW + timedelta(minutes=30)
    write(store, [*hourly(60), SearchDocument("ahead", "message", "launch plan", time=ahead)])
    plan = store.plan(tokenize("launch"))
    assert plan is not None and plan.recent is not None
    assert set(era_tokens(ahead)) & set(plan.recent.window.tokens), plan.recent


def test_a_small_search_counts_the_window_not_the_whole_history(
    store: tantivy_store.TantivyStore,
) -> None:
    write(store, hourly(60))
    plan = store.plan(tokenize("launch"))
    assert plan is not None and plan.recent is not None
    assert plan.doc_freqs == [60] and 10 <= plan.recent.window.docs <= 11
    assert plan.is_small({}, 11) and not plan.is_small({}, 9)


def test_a_window_holding_most_matches_is_not_used(store: tantivy_store.TantivyStore) -> None:
    # Indexed without a time: all stamped with this hour, so a window would hold them all.
    write(store, [SearchDocument(f"u{i}", "message", f"launch plan {i}") for i in range(60)])
    plan = store.plan(tokenize("launch"))
    assert plan is not None and plan.recent is None
    assert len(search(store, "launch", 5)) == 5


def test_rare_words_search_everything(store: tantivy_store.TantivyStore) -> None:
    write(store, hourly(60))
    plan = store.plan(tokenize("59"))
    assert plan is not None and plan.recent is None
    assert search(store, "59", 5) == ["h59"]


def test_quiet_history_takes_whole_eras_and_splits_only_the_one_crossing_the_target() -> None:
    freqs = {
        ERA_MARK: 50,
        "\x02y2026": 3,
        "\x02m202603": 3,
        "\x02y2025": 40,
        "\x02m202512": 30,
        "\x02d20251231": 4,
        "\x02d20251230": 26,
        "\x02h2025123023": 10,
        "\x02h2025123022": 16,
        "\x02y2024": 7,
    }
    looked_up: list[str] = []

    def doc_freq(token: str) -> int:
        looked_up.append(token)
        return freqs.get(token, 0)

    window = recent_window(doc_freq, 15, datetime(2026, 3, 5, tzinfo=UTC))
    assert window is not None
    assert window.tokens == ["\x02y2026", "\x02d20251231", "\x02h2025123023"]
    assert window.docs == 17
    assert len(looked_up) < 40, looked_up
    assert recent_window(doc_freq, 51, datetime(2026, 3, 5, tzinfo=UTC)) is None


def test_the_tokenizer_never_makes_an_era_token() -> None:
    tokens = tokenize("\x02y2026 \x02e \x01 x\x02h2026120615 \x02\x02d20261206")
    assert tokens and not any(t.startswith(("\x01", "\x02")) for t in tokens), tokens


async def test_the_embedded_index_searches_in_the_window(tmp_path: Path) -> None:
    index = EmbeddedSearchIndex(tmp_path / "idx")
    await index.upsert(hourly(60))
    found = [h.id for h in await index.search("launch", SearchFilters(), limit=5)]
    await index.close()
    assert len(found) == 5 and set(found) <= NEWEST_TEN, found
