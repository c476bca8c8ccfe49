"""Turning tantivy's BM25 scores into [0, 1].

We divide a hit's BM25 score by the highest score any document could reach for the same query
on the same index: the sum over the query's tokens of idf * (k1 + 1), which is what BM25 gives
a document containing every token infinitely often. So the score reads as "how much of the
best possible match this is". It is exactly monotonic in the raw score (one query, one divisor),
within [0, 1] by construction, and tokens that no document contains still count in the divisor,
so a query half made of unknown words cannot score high. A document holding each token once
at average length lands near 1 / (k1 + 1) ~ 0.45; a score of 1 is unreachable.

The idf must match tantivy's own, which counts deleted-but-not-yet-merged documents in both N
and n. `doc_freq` on a token present in every document gives that N exactly; see
`tantivy_store.ALL_DOCS_TOKEN`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

# tantivy's BM25 constants (tantivy::query::bm25).
K1 = 1.2
B = 0.75


def idf(doc_freq: int, doc_count: int) -> float:
    doc_freq = min(doc_freq, doc_count)
    return math.log(1.0 + (doc_count - doc_freq + 0.5) / (doc_freq + 0.5))


def bm25_ceiling(doc_count: int, doc_freqs: Iterable[int]) -> float:
    """Supremum of the BM25 score of a disjunction of term queries with these doc freqs."""
    return sum(idf(df, doc_count) * (1.0 + K1) for df in doc_freqs)


def normalize(raw: float, ceiling: float) -> float:
    if ceiling <= 0.0 or raw <= 0.0:
        return 0.0
    # min() only absorbs float32-vs-float64 rounding between tantivy and us.
    return min(1.0, raw / ceiling)
