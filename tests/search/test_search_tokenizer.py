from __future__ import annotations

import logging
import re
import threading
from pathlib import Path

import pytest

from storage.search import tokenizer
from storage.search.tokenizer import query_units, tokenize, tokenize_query


def test_document_gets_bigram_jieba_does_not_produce() -> None:
    # jieba (HMM off) cuts 大量重连 as 大量重 / 连; 重连 must still be a token.
    assert "重连" in tokenize("大量重连")


def test_two_character_query_is_a_token_of_the_longer_compound() -> None:
    assert tokenize_query("数据") == ["数据"]
    assert "数据" in tokenize("数据库连接池")


def test_query_single_characters_merge_into_a_bigram() -> None:
    # 重 / 连 alone would match any text with either character.
    assert tokenize_query("重连") == ["重连"]


def test_query_does_not_bridge_two_jieba_words() -> None:
    tokens = tokenize_query("部署出现")
    assert "部署" in tokens and "出现" in tokens
    assert "署出" not in tokens


def test_snake_case_identifier_is_kept_whole_and_split() -> None:
    assert tokenize("ERR_CONN_RESET") == ["err_conn_reset", "err", "conn", "reset"]


def test_path_is_kept_whole_with_parts_file_name_and_extension() -> None:
    assert tokenize("src/server/ws.ts") == [
        "src/server/ws.ts",
        "src",
        "server",
        "ws.ts",
        "ws",
        "ts",
    ]


def test_camel_case_is_kept_whole_and_split() -> None:
    assert tokenize("getUserName") == ["getusername", "get", "user", "name"]


def test_acronym_before_word_splits_at_the_word() -> None:
    assert tokenize("HTTPServer") == ["httpserver", "http", "server"]


def test_dunder_name_yields_its_inner_word() -> None:
    assert "init" in tokenize("__init__.py")


def test_trailing_punctuation_is_not_part_of_the_identifier() -> None:
    tokens = tokenize("出现 ERR_CONN_RESET，见 (src/server/ws.ts).")
    assert "err_conn_reset" in tokens
    assert "src/server/ws.ts" in tokens


def test_tokens_are_lowercased_and_full_width_folded() -> None:
    assert tokenize("ＥＲＲ_Timeout") == ["err_timeout", "err", "timeout"]


def test_english_and_chinese_stop_words_are_dropped() -> None:
    tokens = tokenize("the state of the art 是我的")
    assert "the" not in tokens and "of" not in tokens
    assert "的" not in tokens and "是" not in tokens
    assert "state" in tokens and "art" in tokens


def test_overlong_blob_is_not_a_token_but_its_parts_are() -> None:
    blob = "x" * 200 + "_tail"
    tokens = tokenize(blob)
    assert blob.lower() not in tokens
    assert "tail" in tokens


def test_mixed_text_tokens_cover_every_part() -> None:
    tokens = tokenize("部署后出现 ERR_CONN_RESET，见 src/server/ws.ts 里的 getUserName")
    for expected in ("部署", "出现", "err_conn_reset", "ws.ts", "getusername", "user"):
        assert expected in tokens


def test_query_tokens_are_distinct() -> None:
    assert tokenize_query("deploy deploy DEPLOY") == ["deploy"]


def test_long_text_bypasses_the_cache_with_same_result() -> None:
    unit = "部署 ERR_CONN_RESET "
    assert tokenize(unit * 200) == tokenize(unit) * 200


def test_query_units_keep_identifiers_whole_and_add_camel_parts_first() -> None:
    assert query_units("getUserName 的 src/server/ws.ts 重连") == [
        "get",
        "user",
        "name",
        "getusername",
        "src/server/ws.ts",
        "重连",
    ]


def test_jieba_cache_goes_to_the_configured_directory(tmp_path: Path) -> None:
    # A fresh process-wide state for this test; restore it afterwards.
    saved = tokenizer._jieba, tokenizer._cache_dir
    try:
        tokenizer._jieba = None
        tokenizer._tokenize_cached.cache_clear()
        tokenizer.configure_tokenizer(tmp_path / "cache")
        assert tokenize("重连测试") == ["重", "连", "测试", "重连", "连测"]
        assert (tmp_path / "cache" / "jieba.cache").is_file()
    finally:
        tokenizer._jieba, tokenizer._cache_dir = saved


def test_unwritable_cache_directory_still_tokenizes(tmp_path: Path) -> None:
    # A read-only filesystem, simulated with a path whose parent is a file (root ignores
    # permission bits): jieba cannot write its cache and must carry on without it.
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    saved = tokenizer._jieba, tokenizer._cache_dir
    try:
        tokenizer._jieba = None
        tokenizer.clear_caches()
        tokenizer.configure_tokenizer(blocker / "cache")
        assert tokenize("只读文件系统") == ["只读", "文件系统", "读文", "文件", "件系", "系统"]
    finally:
        tokenizer._jieba, tokenizer._cache_dir = saved
    assert blocker.read_text() == ""


def test_jieba_loads_once_across_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    loads = []
    original = tokenizer.jieba.Tokenizer

    class Counting(original):  # type: ignore[misc, valid-type]
        def initialize(self, dictionary: str | None = None) -> None:
            loads.append(1)
            super().initialize(dictionary)

    monkeypatch.setattr(tokenizer, "_jieba", None)
    monkeypatch.setattr(tokenizer.jieba, "Tokenizer", Counting)
    tokenizer._tokenize_cached.cache_clear()
    threads = [threading.Thread(target=tokenize, args=(f"并发{i}分词",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(loads) == 1


def test_jieba_does_not_log_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    tokenizer.warm_up()
    tokenize("日志不要打印到标准错误")
    assert not logging.getLogger("jieba").handlers
    assert "Building prefix dict" not in capsys.readouterr().err


def test_a_plain_word_gives_the_tokens_the_full_splitting_gives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Most pieces (`ping`, `Hello`, `c0001`) skip the splitting; they must come out as it
    would have cut them, in chat text, identifiers and Chinese alike."""
    texts = [
        "ping l0-c0001-m0",
        "[m1] 2026-12-03 17:59 ou_bench_warm_000 (user): Hello again",
        "please review src/server/ws.ts before Friday: getUserName HTTPServer __init__ v1.2.3",
        "下雨了记得带雨伞 Meeting notes İstanbul straße Ⅻ x² e-mail THE The the",
    ]
    fast = [tokenize(text) for text in texts]
    tokenizer.clear_caches()
    monkeypatch.setattr(tokenizer, "_PLAIN", re.compile(r"(?!)"))  # matches nothing
    full = [tokenize(text) for text in texts]
    tokenizer.clear_caches()
    assert fast == full
    assert fast[0] == ["ping", "l0-c0001-m0", "l0", "c0001", "m0"]
