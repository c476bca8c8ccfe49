from __future__ import annotations

import pytest

from storage.search.base import MAX_LIMIT, SearchDocument, SearchFilters, effective_limit


def test_no_filters_restrict_nothing() -> None:
    assert not SearchFilters().matches_nothing()
    assert SearchFilters().terms() == {}


def test_any_empty_list_matches_nothing() -> None:
    assert SearchFilters(session_ids=["a"], scopes=[]).matches_nothing()


def test_filter_terms_drop_repeats_and_name_fields() -> None:
    terms = SearchFilters(session_ids=["a", "b", "a"], kinds=("note",)).terms()
    assert terms == {"session_id": ["a", "b"], "kind": ["note"]}


def test_bare_string_filter_is_refused() -> None:
    # "abc" would otherwise mean the sessions "a", "b" and "c".
    with pytest.raises(TypeError, match="session_id"):
        SearchFilters(session_ids="abc").terms()


def test_document_needs_an_id() -> None:
    with pytest.raises(ValueError, match="id"):
        SearchDocument(id="", kind="message", text="x")


def test_limit_is_capped() -> None:
    assert effective_limit(5000) == MAX_LIMIT
    assert effective_limit(-3) == 0
