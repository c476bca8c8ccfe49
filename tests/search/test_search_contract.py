"""The behaviour every SearchIndex backend promises, run against each of them."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from storage.search.base import SearchDocument, SearchFilters, SearchIndex
from tests.search.corpus import KINDS, QUERIES, SCOPES, corpus, session_ids

MIXED = "部署后出现 ERR_CONN_RESET，见 src/server/ws.ts 里的 getUserName"


def msg(doc_id: str, text: str, session: str = "s1") -> SearchDocument:
    return SearchDocument(id=doc_id, kind="message", text=text, session_id=session)


async def ids(index: SearchIndex, query: str, filters: SearchFilters | None = None) -> list[str]:
    return [hit.id for hit in await index.search(query, filters, limit=50)]


# -- Chinese and identifiers ----------------------------------------------------------------


async def test_two_character_query_finds_message_where_jieba_cut_it_differently(
    index: SearchIndex,
) -> None:
    # jieba (HMM off) cuts 大量重连 as 大量重 / 连: no jieba word in common with 重连.
    await index.upsert([msg("a", "昨晚服务器大量重连，用户掉线"), msg("b", "今天天气很好")])
    assert await ids(index, "重连") == ["a"]


async def test_two_character_chinese_word_finds_longer_compound(index: SearchIndex) -> None:
    await index.upsert([msg("a", "数据库连接池满了"), msg("b", "连接已经恢复")])
    assert await ids(index, "数据") == ["a"]


async def test_error_code_finds_mixed_message(index: SearchIndex) -> None:
    await index.upsert([msg("a", MIXED), msg("b", "部署成功，没有报错")])
    assert await ids(index, "ERR_CONN_RESET") == ["a"]


async def test_file_name_finds_mixed_message(index: SearchIndex) -> None:
    await index.upsert([msg("a", MIXED), msg("b", "部署成功，见 src/server/http.go")])
    assert await ids(index, "ws.ts") == ["a"]


async def test_camel_case_identifier_finds_mixed_message_first(index: SearchIndex) -> None:
    # getUserId shares the parts get/user: it may come back, but never ahead of the match.
    await index.upsert([msg("b", "getUserId 返回空"), msg("a", MIXED), msg("c", "部署成功")])
    found = await ids(index, "getUserName")
    assert found[0] == "a"
    assert "c" not in found


async def test_camel_case_part_finds_identifier(index: SearchIndex) -> None:
    await index.upsert([msg("a", MIXED), msg("b", "部署后一切正常")])
    assert await ids(index, "UserName") == ["a"]


async def test_query_of_only_stop_words_finds_nothing(index: SearchIndex) -> None:
    await index.upsert([msg("a", "the cat is on the mat"), msg("b", "这是我的")])
    assert await ids(index, "the of 的") == []


# -- filters ---------------------------------------------------------------------------------


async def test_session_filter_never_returns_other_sessions(index: SearchIndex) -> None:
    sessions = session_ids(100)
    await index.upsert(corpus(sessions, per_session=6))
    rnd = random.Random(42)
    hits_seen = 0
    for round_ in range(40):
        allowed = set(rnd.sample(sessions, 32))
        query = QUERIES[round_ % len(QUERIES)]
        hits = await index.search(query, SearchFilters(session_ids=sorted(allowed)), limit=100)
        assert {h.session_id for h in hits} <= allowed, query
        hits_seen += len(hits)
    assert hits_seen > 100  # the filter was exercised, not vacuously satisfied


async def test_kind_filter_never_returns_other_kinds(index: SearchIndex) -> None:
    await index.upsert(corpus(session_ids(20), per_session=6))
    for kind in KINDS:
        for query in QUERIES[:8]:
            hits = await index.search(query, SearchFilters(kinds=[kind]), limit=100)
            assert hits and {h.kind for h in hits} == {kind}, (kind, query)


async def test_scope_filter_never_returns_other_scopes(index: SearchIndex) -> None:
    await index.upsert(corpus(session_ids(20), per_session=6))
    for scope in SCOPES:
        for query in QUERIES[:8]:
            hits = await index.search(query, SearchFilters(scopes=[scope]), limit=100)
            assert hits and {h.scope for h in hits} == {scope}, (scope, query)


async def test_filters_combine_with_and(index: SearchIndex) -> None:
    sessions = session_ids(10)
    await index.upsert(corpus(sessions, per_session=6))
    filters = SearchFilters(session_ids=sessions[:5], kinds=["note"], scopes=["group", "shared"])
    hits = await index.search("用户", filters, limit=100)
    assert hits
    assert all(
        h.session_id in sessions[:5] and h.kind == "note" and h.scope in ("group", "shared")
        for h in hits
    )


async def test_source_filter_keeps_only_that_source(index: SearchIndex) -> None:
    await index.upsert(
        [
            SearchDocument("a", "message", "部署", source_id="feishu:1"),
            SearchDocument("b", "message", "部署", source_id="feishu:2"),
            SearchDocument("c", "message", "部署"),
        ]
    )
    assert await ids(index, "部署", SearchFilters(source_ids=["feishu:2"])) == ["b"]


async def test_empty_filter_list_matches_nothing(index: SearchIndex) -> None:
    await index.upsert([msg("a", "部署失败 deploy failed")])
    assert await ids(index, "部署") == ["a"]
    for filters in (
        SearchFilters(session_ids=[]),
        SearchFilters(kinds=[]),
        SearchFilters(scopes=[]),
        SearchFilters(source_ids=[]),
    ):
        assert await ids(index, "部署", filters) == []


async def test_filter_values_with_quotes_and_backslashes_match_exactly(
    index: SearchIndex,
) -> None:
    tricky = ['a"b', "a\\", 'a\\"b', '"', "\\", "a'b", 'x" OR session_id = "s1']
    await index.upsert([msg(f"m{i}", "告警 alert", session=s) for i, s in enumerate(tricky)])
    await index.upsert([msg("plain", "告警 alert", session="s1")])
    for i, session in enumerate(tricky):
        assert await ids(index, "告警", SearchFilters(session_ids=[session])) == [f"m{i}"]


async def test_session_ids_differing_only_in_case_stay_apart(index: SearchIndex) -> None:
    await index.upsert(
        [msg("upper", "告警 alert", session="Chat-A"), msg("lower", "告警", "chat-a")]
    )
    assert await ids(index, "告警", SearchFilters(session_ids=["Chat-A"])) == ["upper"]
    assert await ids(index, "告警", SearchFilters(session_ids=["chat-a"])) == ["lower"]


# -- scores, excerpts, fields ----------------------------------------------------------------


async def test_scores_lie_between_zero_and_one_best_first(index: SearchIndex) -> None:
    await index.upsert(corpus(session_ids(10), per_session=6))
    for query in QUERIES:
        hits = await index.search(query, limit=100)
        scores = [h.score for h in hits]
        assert all(0.0 <= s <= 1.0 for s in scores), query
        assert scores == sorted(scores, reverse=True), query


async def test_excerpts_are_short_and_contain_the_match(index: SearchIndex) -> None:
    filler = "这是一段很长的无关内容，用来把关键字推到中间。" * 40
    text = f"{filler} 然后出现了 ERR_CONN_RESET 错误 {filler}"
    await index.upsert([msg("long", text)])
    (hit,) = await index.search("ERR_CONN_RESET")
    assert hit.excerpts
    assert all(len(e) <= 200 for e in hit.excerpts)
    assert "ERR_CONN_RESET" in hit.excerpts[0]


async def test_hit_carries_the_document_fields(index: SearchIndex) -> None:
    when = datetime(2025, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)
    doc = SearchDocument(
        id="doc/1 with spaces & ünïcode",
        kind="note",
        text="记得续费 renew the domain",
        title="域名",
        session_id="oc_1",
        source_id="feishu:msg:9",
        scope="private",
        time=when,
    )
    await index.upsert([doc])
    (hit,) = await index.search("续费")
    assert (hit.id, hit.kind, hit.title) == (doc.id, "note", "域名")
    assert (hit.session_id, hit.source_id, hit.scope, hit.time) == (
        "oc_1",
        "feishu:msg:9",
        "private",
        when,
    )


async def test_limit_caps_the_number_of_hits(index: SearchIndex) -> None:
    await index.upsert([msg(f"m{i}", f"部署 第{i}次") for i in range(12)])
    assert len(await index.search("部署", limit=5)) == 5


# -- writes ----------------------------------------------------------------------------------


async def test_upsert_replaces_without_duplicates(index: SearchIndex) -> None:
    await index.upsert([msg("a", "缓存失效 cache miss")])
    await index.upsert([msg("a", "缓存失效 cache miss again")])
    await index.upsert([msg("a", "磁盘已满 disk full")])
    assert await ids(index, "磁盘") == ["a"]
    assert await ids(index, "缓存") == []


async def test_upsert_batch_with_repeated_id_keeps_the_last(index: SearchIndex) -> None:
    await index.upsert([msg("a", "第一版 first"), msg("a", "第二版 second")])
    assert await ids(index, "second") == ["a"]
    assert await ids(index, "first") == []


async def test_delete_removes_documents(index: SearchIndex) -> None:
    await index.upsert([msg("a", "部署 deploy"), msg("b", "部署 deploy")])
    await index.delete(["a", "never-existed"])
    assert await ids(index, "部署") == ["b"]


async def test_clear_removes_everything(index: SearchIndex) -> None:
    await index.upsert([msg("a", "部署 deploy"), msg("b", "日志 logs")])
    await index.clear()
    assert await ids(index, "部署") == []
    assert await ids(index, "日志") == []


async def test_health_passes_on_a_working_index(index: SearchIndex) -> None:
    await index.health()
    await index.upsert([msg("a", "部署")])
    assert await ids(index, "部署") == ["a"]
