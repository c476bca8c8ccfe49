"""Short excerpts around the places a query matched, for backends that do not crop themselves."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

ELLIPSIS = "…"
# Occurrences looked at per token: enough to pick good windows, bounded for huge texts.
_MAX_OCCURRENCES_PER_TOKEN = 64
# How far a window edge may move to avoid cutting a word in half.
_SNAP_DISTANCE = 12


@dataclass(frozen=True)
class _Match:
    start: int
    end: int
    token: str


def excerpts(
    text: str, query_tokens: Sequence[str], max_len: int = 200, max_count: int = 3
) -> list[str]:
    """Up to `max_count` excerpts of at most `max_len` characters (ellipses included), best
    first: each is a window of `text` holding as many distinct query tokens as possible, with
    whitespace runs collapsed. Without any match, the start of the text: the caller still
    wants to show something."""
    if not text or max_len <= 0 or max_count <= 0:
        return []
    if len(text) <= max(1, max_len - 2):
        # The whole text fits in one window (the ellipsis room spared), so the best window is
        # the whole text whatever matched; most chat messages are this short. No ellipsis and
        # nothing to cut: `_render` of the whole text is this.
        return [" ".join(text.split())]
    matches = _find_matches(_fold(text), query_tokens)
    if not matches:
        return [_render(text, 0, min(len(text), max(1, max_len - 1)), max_len)]
    out: list[str] = []
    remaining = matches
    while remaining and len(out) < max_count:
        start, end = _best_window(text, remaining, max_len)
        out.append(_render(text, start, end, max_len))
        remaining = [m for m in remaining if m.end <= start or m.start >= end]
    return out


def _fold(text: str) -> str:
    """Lowercased NFKC text of the same length as `text`, so offsets carry over; characters
    whose folding changes the length are kept as they are."""
    folded = unicodedata.normalize("NFKC", text).lower()
    if len(folded) == len(text):
        return folded
    chars = []
    for ch in text:
        f = unicodedata.normalize("NFKC", ch).lower()
        chars.append(f if len(f) == 1 else ch)
    return "".join(chars)


def _find_matches(folded: str, tokens: Sequence[str]) -> list[_Match]:
    matches: list[_Match] = []
    for token in set(tokens):
        if not token:
            continue
        pos = folded.find(token)
        found = 0
        while pos != -1 and found < _MAX_OCCURRENCES_PER_TOKEN:
            matches.append(_Match(pos, pos + len(token), token))
            found += 1
            pos = folded.find(token, pos + len(token))
    matches.sort(key=lambda m: (m.start, -m.end))
    return matches


def _best_window(text: str, matches: list[_Match], max_len: int) -> tuple[int, int]:
    """The window that holds the most distinct tokens (longer tokens break ties, so
    `err_conn_reset` beats its part `err`); it starts a little before its first match so the
    reader gets some context."""
    budget = max(1, max_len - 2)  # room for an ellipsis on each side
    best = matches[0]
    best_score = (-1, -1)
    for i, first in enumerate(matches):
        seen: set[str] = set()
        covered = 0
        for m in matches[i:]:
            if m.end - first.start > budget:
                break
            if m.token not in seen:
                seen.add(m.token)
                covered += len(m.token)
        score = (len(seen), covered)
        if score > best_score:
            best, best_score = first, score
    lead = max(0, (budget - (best.end - best.start)) // 3)
    start = max(0, best.start - lead)
    end = min(len(text), start + budget)
    start = max(0, min(start, end - budget))
    return _snap(text, start, end, best.start)


def _snap(text: str, start: int, end: int, first_match: int) -> tuple[int, int]:
    if start > 0 and text[start - 1].isalnum() and text[start].isalnum():
        space = text.find(" ", start, min(first_match, start + _SNAP_DISTANCE))
        if space != -1:
            start = space + 1
    if end < len(text) and text[end - 1].isalnum() and text[end].isalnum():
        space = text.rfind(" ", max(first_match + 1, end - _SNAP_DISTANCE), end)
        if space != -1:
            end = space
    return start, end


def _render(text: str, start: int, end: int, max_len: int) -> str:
    # split() and strip() share `\s`'s notion of whitespace; this is the cheaper spelling of
    # `\s+` -> " " and strip.
    body = " ".join(text[start:end].split())
    prefix = "" if start == 0 else ELLIPSIS
    suffix = "" if end >= len(text) else ELLIPSIS
    body = body[: max(0, max_len - len(prefix) - len(suffix))]
    return f"{prefix}{body}{suffix}"[:max_len]
