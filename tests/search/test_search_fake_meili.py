"""The fake behaves like the documented Meilisearch API. These tests talk to it with the
official client only, so they would pass against a real server too."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import meilisearch
import pytest
import requests
from meilisearch.errors import MeilisearchApiError

from tests.fakes.meilisearch import FakeMeilisearch, parse_filter


@pytest.fixture
def fake() -> Iterator[FakeMeilisearch]:
    with FakeMeilisearch(master_key="k") as server:
        yield server


@pytest.fixture
def movies(fake: FakeMeilisearch) -> meilisearch.index.Index:
    client = meilisearch.Client(fake.url, "k")
    index = client.index("movies")
    settings = index.update_settings(
        {
            "filterableAttributes": [
                "genre",
                {
                    "attributePatterns": ["director"],
                    "features": {"facetSearch": False, "filter": {"equality": True}},
                },
            ]
        }
    )
    client.wait_for_task(settings.task_uid)
    task = index.add_documents(
        [
            {"id": 1, "title": "Carol", "genre": "Romance", "director": "Todd Haynes"},
            {"id": 2, "title": "Wonder Woman", "genre": "Action", "director": "Patty Jenkins"},
            {"id": 3, "title": "Life of Pi", "genre": "Adventure", "director": "Ang Lee"},
        ]
    )
    client.wait_for_task(task.task_uid)
    return index


def titles(result: dict[str, Any]) -> list[str]:
    return [hit["title"] for hit in result["hits"]]


def test_health_needs_no_key_but_everything_else_does(fake: FakeMeilisearch) -> None:
    assert requests.get(f"{fake.url}/health", timeout=5).json() == {"status": "available"}
    missing = requests.get(f"{fake.url}/indexes", timeout=5)
    assert (missing.status_code, missing.json()["code"]) == (401, "missing_authorization_header")
    wrong = requests.get(f"{fake.url}/indexes", headers={"Authorization": "Bearer x"}, timeout=5)
    assert (wrong.status_code, wrong.json()["code"]) == (403, "invalid_api_key")


def test_writes_are_enqueued_tasks(fake: FakeMeilisearch) -> None:
    client = meilisearch.Client(fake.url, "k")
    info = client.index("books").add_documents([{"id": "b1", "title": "Dune"}])
    assert info.status == "enqueued" and info.type == "documentAdditionOrUpdate"
    assert client.wait_for_task(info.task_uid).status == "succeeded"
    assert client.get_index("books").primary_key == "id"


def test_invalid_document_id_fails_the_whole_task(fake: FakeMeilisearch) -> None:
    client = meilisearch.Client(fake.url, "k")
    info = client.index("books").add_documents(
        [{"id": "ok-1", "t": "a"}, {"id": "not ok!", "t": "b"}], primary_key="id"
    )
    task = client.wait_for_task(info.task_uid)
    assert task.status == "failed"
    assert task.error is not None and task.error["code"] == "invalid_document_id"
    assert client.index("books").get_stats().number_of_documents == 0


def test_filter_on_non_filterable_attribute_is_a_400(movies: meilisearch.index.Index) -> None:
    with pytest.raises(MeilisearchApiError) as raised:
        movies.search("", {"filter": 'title = "Carol"'})
    assert (raised.value.status_code, raised.value.code) == (400, "invalid_search_filter")


def test_comparison_forbidden_by_granular_features_is_a_400(
    movies: meilisearch.index.Index,
) -> None:
    with pytest.raises(MeilisearchApiError) as raised:
        movies.search("", {"filter": 'director > "A"'})
    assert raised.value.code == "invalid_search_filter"


def test_malformed_filter_is_a_400(movies: meilisearch.index.Index) -> None:
    for bad in ['genre = "unclosed', "genre IN [a, b", "genre ==", "AND genre = a"]:
        with pytest.raises(MeilisearchApiError) as raised:
            movies.search("", {"filter": bad})
        assert raised.value.code == "invalid_search_filter", bad


def test_string_equality_is_case_insensitive(movies: meilisearch.index.Index) -> None:
    assert titles(movies.search("", {"filter": "genre = romance"})) == ["Carol"]
    assert titles(movies.search("", {"filter": 'director IN ["ANG LEE", "nobody"]'})) == [
        "Life of Pi"
    ]


def test_filters_combine_with_and_or_not(movies: meilisearch.index.Index) -> None:
    expr = '(genre = Action OR genre = Adventure) AND NOT director = "Ang Lee"'
    assert titles(movies.search("", {"filter": expr})) == ["Wonder Woman"]


def test_last_query_word_is_a_prefix(movies: meilisearch.index.Index) -> None:
    assert titles(movies.search("wond")) == ["Wonder Woman"]
    assert titles(movies.search("wond ")) == []


def test_words_after_the_tenth_are_ignored(movies: meilisearch.index.Index) -> None:
    padding = " ".join(["carol"] * 10)
    result = movies.search(f"{padding} zzzunknown", {"matchingStrategy": "all"})
    assert titles(result) == ["Carol"]


def test_ranking_score_and_crop_with_custom_marker(movies: meilisearch.index.Index) -> None:
    result = movies.search(
        "pi",
        {
            "showRankingScore": True,
            "attributesToCrop": ["title"],
            "cropLength": 2,
            "cropMarker": "[…]",
            "attributesToHighlight": ["title"],
            "highlightPreTag": "<b>",
            "highlightPostTag": "</b>",
        },
    )
    (hit,) = result["hits"]
    assert 0.0 <= hit["_rankingScore"] <= 1.0
    assert hit["_formatted"]["title"] == "[…]of <b>Pi</b>"


def test_filter_values_unescape_like_milli() -> None:
    # Cases from milli's filter-parser test_value table.
    cases = {
        r'x = "\\"': "\\",
        r'x = "aa\\aa"': r"aa\aa",
        r'x = "Hello \"world\""': 'Hello "world"',
        r'x = "Hello \\\"world\\\""': r"Hello \"world\"",
        r"x = 'I\'m \"super\" tamo'": 'I\'m "super" tamo',
    }
    for expr, value in cases.items():
        assert parse_filter(expr) == ("cmp", "x", "=", value), expr


def test_paused_tasks_stay_unfinished_until_resumed(fake: FakeMeilisearch) -> None:
    client = meilisearch.Client(fake.url, "k")
    fake.pause_tasks()
    info = client.index("books").add_documents([{"id": "b1"}])
    assert client.get_task(info.task_uid).status in ("enqueued", "processing")
    fake.resume_tasks()
    assert client.get_task(info.task_uid).status == "succeeded"
