"""The tantivy queries of the embedded backend: the text as a union of term queries (its
common tokens within a window of recent documents, see eras.py), filters as zero-scored
clauses."""

from __future__ import annotations

import tantivy

from storage.search.eras import Window

# A filter with more values than this is a term set (see `any_of`).
MAX_TERM_UNION = 64


def build_query(
    schema: tantivy.Schema,
    tokens: list[str],
    common: list[bool],
    filters: dict[str, list[str]],
    recent: tantivy.Query | None,
) -> tantivy.Query:
    """`recent`: the window's `recent_clause`, or None to weigh common tokens everywhere."""
    Query, Occur = tantivy.Query, tantivy.Occur
    if recent is None:
        text = _union(schema, tokens)
    else:
        rare = [t for t, is_common in zip(tokens, common, strict=True) if not is_common]
        common_tokens = [t for t, is_common in zip(tokens, common, strict=True) if is_common]
        # The window goes first: tantivy leads the intersection with its first clause here,
        # and led by the common words it took 2.4x as long (measured, 100k documents).
        windowed = Query.boolean_query(
            [(Occur.Must, recent), (Occur.Must, _union(schema, common_tokens))]
        )
        text = Query.boolean_query(
            [(Occur.Should, Query.term_query(schema, "tokens", t)) for t in rare]
            + [(Occur.Should, windowed)]
        )
    if not filters:
        return text
    clauses = [(Occur.Must, text)]
    for field_name, values in filters.items():
        # Zero the filter's score so filters do not move scores.
        allowed = Query.const_score_query(any_of(schema, field_name, values), 0.0)
        clauses.append((Occur.Must, allowed))
    return Query.boolean_query(clauses)


def recent_clause(schema: tantivy.Schema, window: Window) -> tantivy.Query:
    """The documents of the window, zero-scored: only the common tokens score, as they would
    alone."""
    return tantivy.Query.const_score_query(any_of(schema, "tokens", window.tokens), 0.0)


def _union(schema: tantivy.Schema, tokens: list[str]) -> tantivy.Query:
    Query, Occur = tantivy.Query, tantivy.Occur
    return Query.boolean_query(
        [(Occur.Should, Query.term_query(schema, "tokens", t)) for t in tokens]
    )


def filter_postings(searcher: tantivy.Searcher, filters: dict[str, list[str]]) -> float:
    """The postings of the smallest filter, which bounds an intersection with it (a term set
    past MAX_TERM_UNION values is not counted: reading it is its own cost)."""
    sizes = [
        sum(searcher.doc_freq(name, v) for v in values)
        for name, values in filters.items()
        if len(values) <= MAX_TERM_UNION
    ]
    return min(sizes, default=float("inf"))


def any_of(schema: tantivy.Schema, field_name: str, values: list[str]) -> tantivy.Query:
    """Documents whose `field_name` is one of `values`. A term set reads every posting of its
    terms into a bitset before the intersection starts, so a filter on a large scope cost as
    much as reading the scope; term queries let the intersection skip to the text's matches.
    Past a few dozen values a union of term queries costs more than the bitset."""
    Query, Occur = tantivy.Query, tantivy.Occur
    if len(values) == 1:
        return Query.term_query(schema, field_name, values[0])
    if len(values) <= MAX_TERM_UNION:
        return Query.boolean_query(
            [(Occur.Should, Query.term_query(schema, field_name, v)) for v in values]
        )
    return Query.term_set_query(schema, field_name, values)
