"""The bare tantivy baseline of the search benchmarks (`search.py`, `memory.py`): the same
documents in a plain tantivy index, queried with tantivy's own API and no product code around
it. Not a benchmark (the runner skips files whose name starts with `_`).

Two ways to query it:

* `default`: `text` (title and text) with tantivy's default tokenizer, the query from
  `Index.parse_query`. This is tantivy as it comes. It does not tokenize like the product:
  the default tokenizer keeps a run of Chinese characters as one token, so it finds far fewer
  Chinese matches and does less work. A lower bound, not the same search.
* `jieba`: a second field holds the product's own jieba tokens (`storage.search.tokenizer`,
  whitespace-indexed, as the product's `tokens` field), queried with one SHOULD term query a
  query token: the product's matching without its wrapping (worker thread, score
  normalization, payload decoding, excerpts).

Filters are raw-term fields (`session_id`, `kind`, `scope`), ANDed with the text query: one
allowed value as a term query, several as a term set. A search fetches each hit's stored
`id` and `text`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import tantivy

from storage.search import SearchDocument
from storage.search.tokenizer import tokenize, tokenize_query

FILTER_FIELDS = ("session_id", "kind", "scope")
Filters = Mapping[str, Sequence[str]]


class BareIndex:
    """The documents in one commit (one writer thread, a 200 MB heap), merged, reloaded."""

    def __init__(self, path: Path, docs: Sequence[SearchDocument]) -> None:
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("id", stored=True, tokenizer_name="raw", index_option="basic")
        for name in FILTER_FIELDS:
            builder.add_text_field(name, tokenizer_name="raw", index_option="basic")
        builder.add_text_field("text", stored=True)  # the default tokenizer
        builder.add_text_field("jieba", tokenizer_name="whitespace", index_option="freq")
        self.schema = builder.build()
        path.mkdir(parents=True, exist_ok=True)
        self.index = tantivy.Index(self.schema, path=str(path))
        writer = self.index.writer(heap_size=200_000_000, num_threads=1)
        for doc in docs:
            out = tantivy.Document(
                id=doc.id,
                text=f"{doc.title}\n{doc.text}",
                jieba=" ".join(tokenize(doc.title) + tokenize(doc.text)),
            )
            for name in FILTER_FIELDS:
                value = getattr(doc, name)
                if value is not None:
                    out.add_text(name, value)
            writer.add_document(out)
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()

    def default(self, query: str, filters: Filters, limit: int = 10) -> list[tuple[str, str]]:
        return self._run(self._default_query(query, filters), limit)

    def jieba(self, query: str, filters: Filters, limit: int = 10) -> list[tuple[str, str]]:
        return self._run(self._jieba_query(query, filters), limit)

    def matches(self, query: str, filters: Filters) -> tuple[int, int]:
        """How many documents each bare query matches within the filters (untimed): default
        tokenizer, jieba tokens."""
        searcher = self.index.searcher()
        return (
            int(getattr(searcher.search(self._default_query(query, filters), 1), "count", 0)),
            int(getattr(searcher.search(self._jieba_query(query, filters), 1), "count", 0)),
        )

    def segments(self) -> int:
        return int(self.index.searcher().num_segments)

    def _default_query(self, query: str, filters: Filters) -> tantivy.Query:
        return self._filtered(self.index.parse_query(query, ["text"]), filters)

    def _jieba_query(self, query: str, filters: Filters) -> tantivy.Query:
        Q = tantivy.Query
        text = Q.boolean_query(
            [(tantivy.Occur.Should, Q.term_query(self.schema, "jieba", t))
             for t in tokenize_query(query)]
        )  # fmt: skip
        return self._filtered(text, filters)

    def _filtered(self, text: tantivy.Query, filters: Filters) -> tantivy.Query:
        Q = tantivy.Query
        clauses = [(tantivy.Occur.Must, text)]
        for name, values in filters.items():
            allowed = list(values)
            if len(allowed) == 1:
                clauses.append((tantivy.Occur.Must, Q.term_query(self.schema, name, allowed[0])))
            else:
                clauses.append((tantivy.Occur.Must, Q.term_set_query(self.schema, name, allowed)))
        return Q.boolean_query(clauses)

    def _run(self, query: tantivy.Query, limit: int) -> list[tuple[str, str]]:
        searcher = self.index.searcher()
        out = []
        for _score, address in searcher.search(query, limit).hits:
            doc = searcher.doc(address)
            out.append((str(doc.get_first("id")), str(doc.get_first("text"))))
        return out
