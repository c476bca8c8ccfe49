"""A finding close to one already told (or queued for the Bot to tell) is a repeat unless
something new backs it: a ref the earlier finding did not have. Closeness is word overlap
over the one tokenizer (storage/search/tokenizer.py), so it works for Chinese as for English."""

from __future__ import annotations

from collections.abc import Sequence

from storage.models import Finding
from storage.search.tokenizer import tokenize_query

CLOSE = 0.4  # Jaccard overlap of distinct words at which two findings say the same thing


def words(text: str) -> set[str]:
    return {w.lower() for w in tokenize_query(text) if w.strip()}


def closeness(a: str, b: str) -> float:
    wa, wb = words(a), words(b)
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


def repeat_of(text: str, refs: Sequence[str], told: Sequence[Finding]) -> Finding | None:
    """The told finding this one repeats, or None when it is new or newly backed."""
    for earlier in told:
        if closeness(text, earlier.text) >= CLOSE and set(refs) <= set(earlier.refs):
            return earlier
    return None
