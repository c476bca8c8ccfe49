"""Pure pieces of the Meilisearch adapter: filter quoting, query trimming, ids, chunks."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from storage.search.base import SearchDocument
from storage.search.meili_documents import (
    chunk_text,
    facet_value,
    to_meili_documents,
)
from storage.search.meili_query import (
    HIGHLIGHT_POST,
    HIGHLIGHT_PRE,
    excerpt_from_formatted,
    filter_expression,
    meili_query_text,
    quote,
)
from storage.search.meili_settings import desired_settings, needs_update
from tests.fakes.meilisearch import parse_filter


@given(st.text())
def test_quoted_value_round_trips_through_milli_filter_grammar(value: str) -> None:
    # parse_filter follows milli's value parser (quoted_by + Rust-style unescape).
    assert parse_filter(f"session_id = {quote(value)}") == ("cmp", "session_id", "=", value)


def test_filter_expression_lists_values_per_field() -> None:
    expr = filter_expression({"session_id": ["oc_a", "oc_b"], "kind": ["message"]})
    assert expr == 'session_id IN ["oc_a", "oc_b"] AND kind IN ["message"]'


def test_facet_value_keeps_plain_ids_and_hashes_the_rest() -> None:
    assert facet_value("oc_5ad11d72b8") == "oc_5ad11d72b8"
    hashed = {facet_value(v) for v in ("Chat-A", "chat-a ", "ｃhat-a", "~x")}
    assert len(hashed) == 4
    assert all(v.startswith("~") for v in hashed)


def test_query_is_trimmed_to_ten_meilisearch_words_without_stop_words() -> None:
    query = "the error of " + " ".join(f"word{i}" for i in range(20))
    assert meili_query_text(query) == "error " + " ".join(f"word{i}" for i in range(9))


def test_chinese_query_is_split_into_units_before_trimming() -> None:
    q = meili_query_text("部署后出现连接重置错误然后服务器大量重连导致消息丢失用户投诉")
    assert q.startswith("部署 后 出现 连接 重置")
    assert len(q.split()) < 15


def test_identifier_query_costs_its_punctuation_separated_words() -> None:
    # err_conn_reset is three Meilisearch words, src/server/ws.ts four: 3 + 4 + 3 = 10.
    q = meili_query_text("ERR_CONN_RESET src/server/ws.ts getUserName other words here")
    assert q == "err_conn_reset src/server/ws.ts get user name"


def test_query_drops_quotes_and_leading_minus() -> None:
    assert '"' not in meili_query_text('say "hello" -v')
    assert not any(w.startswith("-") for w in meili_query_text("-rf --force").split())


def test_excerpt_from_formatted_strips_tags_and_keeps_the_match_in_view() -> None:
    formatted = "…" + "前文" * 150 + f"{HIGHLIGHT_PRE}重连{HIGHLIGHT_POST}" + "后文" * 150 + "…"
    excerpt = excerpt_from_formatted(formatted)
    assert len(excerpt) <= 200
    assert "重连" in excerpt
    assert HIGHLIGHT_PRE not in excerpt and HIGHLIGHT_POST not in excerpt


@given(st.text(alphabet=st.sampled_from("ab 重连\n。"), max_size=3000))
def test_chunks_cover_every_word_within_limits(text: str) -> None:
    chunks = chunk_text(text, max_words=50, max_chars=120)
    assert all(len(c) <= 120 and len(c.split()) <= 50 for c in chunks)
    assert "".join("".join(c.split()) for c in chunks) == "".join(text.split())


def test_every_chunk_carries_the_document_and_its_filters() -> None:
    doc = SearchDocument("d", "log", "词 " * 5_000, session_id="Chat-A", scope="private")
    chunks = to_meili_documents(doc, rev="r1")
    assert [c["pk"] for c in chunks] == [f"{chunks[0]['doc_key']}-{n}" for n in range(3)]
    assert {c["session_id"] for c in chunks} == {facet_value("Chat-A")}
    assert all(c["src"]["session_id"] == "Chat-A" and c["rev"] == "r1" for c in chunks)


def test_settings_match_what_the_server_returns_with_defaults_filled_in() -> None:
    current = {
        **desired_settings(),
        "typoTolerance": {
            "enabled": True,
            "minWordSizeForTypos": {"oneTypo": 5, "twoTypos": 9},
            "disableOnWords": [],
            "disableOnAttributes": ["tokens"],
            "disableOnNumbers": True,
        },
        "rankingRules": ["words", "typo"],
    }
    assert not needs_update(current, desired_settings())
    assert needs_update({**current, "distinctAttribute": None}, desired_settings())
    assert needs_update(
        {**current, "searchableAttributes": ["text", "title", "tokens"]}, desired_settings()
    )
