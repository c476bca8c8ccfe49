"""Text matching: folding, query words (Latin runs, CJK substrings, last-word prefix),
match spans in a value, and cropping/highlighting around them."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

_CJK = "\u3005\u3007\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_QUERY_WORD_RE = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+")
_DOC_WORD_RE = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")
_CJK_RE = re.compile(rf"[{_CJK}]")
QUERY_WORD_LIMIT = 10


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


@dataclass(frozen=True)
class _Word:
    text: str
    cjk: bool
    prefix: bool

    def in_text(self, folded: str, words: set[str]) -> bool:
        if self.cjk:
            return self.text in folded
        if self.text in words:
            return True
        return self.prefix and any(w.startswith(self.text) for w in words)


def _query_words(q: str) -> list[_Word]:
    found = [m.group(0) for m in _QUERY_WORD_RE.finditer(_fold(q))][:QUERY_WORD_LIMIT]
    ends_open = bool(q) and not q[-1].isspace() and (q[-1].isalnum() or bool(_CJK_RE.match(q[-1])))
    return [
        _Word(w, bool(_CJK_RE.match(w)), ends_open and i == len(found) - 1)
        for i, w in enumerate(found)
    ]


def _matches_at(text: str, words: list[_Word]) -> list[tuple[int, int]]:
    folded = _fold(text) if len(_fold(text)) == len(text) else text.lower()
    spans = []
    for m in _DOC_WORD_RE.finditer(folded):
        if any(
            not w.cjk and (m.group(0) == w.text or (w.prefix and m.group(0).startswith(w.text)))
            for w in words
        ):
            spans.append(m.span())
    for w in words:
        if w.cjk:
            spans.extend((m.start(), m.end()) for m in re.finditer(re.escape(w.text), folded))
    return sorted(spans)


def _crop(text: str, words: list[_Word], length: int, marker: str) -> str:
    tokens = list(_DOC_WORD_RE.finditer(text))
    if len(tokens) <= length:
        return text
    spans = _matches_at(text, words)
    center = 0
    if spans:
        center = next((i for i, t in enumerate(tokens) if t.end() > spans[0][0]), 0)
    first = max(0, min(center - length // 2, len(tokens) - length))
    last = first + length - 1
    start = 0 if first == 0 else tokens[first].start()
    end = len(text) if last == len(tokens) - 1 else tokens[last].end()
    return f"{marker if start else ''}{text[start:end]}{marker if end < len(text) else ''}"


def _highlight(text: str, words: list[_Word], pre: str, post: str) -> str:
    out, cursor = [], 0
    for start, end in _matches_at(text, words):
        if start < cursor:
            continue
        out += [text[cursor:start], pre, text[start:end], post]
        cursor = end
    out.append(text[cursor:])
    return "".join(out)
