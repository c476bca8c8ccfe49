"""The one tokenizer shared by every search backend, for documents and queries alike.

Chinese has no spaces, and neither tantivy's built-in tokenizers nor a plain `split()` segment
it, so we segment in Python and hand the backends space-separated tokens. Three rules:

* CJK runs go through jieba with HMM off. HMM guesses at unknown words and guesses differently
  for a word alone (the query) and in context (the document); the dictionary-only cut is stable.
  Even so the cut is context dependent: `大量重连` comes out as `大量重 / 连`, so the query
  `重连` (cut `重 / 连`) shares no jieba word with it. Documents therefore also get every
  character bigram of each CJK run, which makes any two-character query a substring match.
  Queries get their jieba words plus bigrams where that is all we have (inside words of three or
  more characters, and across runs of single characters), never bigrams straddling two words,
  which would only add noise.
* Technical chunks (identifiers, paths, URLs) are kept whole and also split, recursively: first
  on punctuation other than `._-`, then on `._-`, then camelCase.
* Everything is NFKC-normalised (full-width ASCII becomes ASCII) and lowercased; a small stop
  list drops words that match everything.

jieba loads its dictionary (~0.6 s) once per process, on first use, from a cache file in a
directory we choose (`configure_tokenizer`), so a read-only root filesystem still works.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

import jieba

__all__ = [
    "clear_caches",
    "configure_tokenizer",
    "is_cjk",
    "is_warm",
    "query_units",
    "tokenize",
    "tokenize_query",
    "warm_up",
]

# Kana, CJK Unified Ideographs (+ extension A and B..), compatibility ideographs. Hangul is
# space-separated, so it takes the technical-chunk path like Latin words.
_CJK_CLASS = "\u3005\u3007\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ffff"
_SEGMENT_RE = re.compile(rf"([{_CJK_CLASS}]+)|([^\s{_CJK_CLASS}]+)")
_CJK_RE = re.compile(rf"[{_CJK_CLASS}]")
# Split levels for technical chunks: anything but word characters and `._-`, then `._-`.
_SPLIT_OUTER_RE = re.compile(r"[^\w.\-]+")
_SPLIT_INNER_RE = re.compile(r"[._\-]+")
_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_EDGE_STRIP = re.compile(r"^\W+|\W+$")
# A piece with nothing to strip, split or break at a case change (`ping`, `Hello`, `c0001`):
# its only token is itself, lower-cased. Most pieces are, and the splitting found just that,
# at five regular expressions a piece.
_PLAIN = re.compile(r"[a-z0-9]+|[A-Z][a-z0-9]*")

# A token this long is a blob (base64, minified code), not something anyone types.
MAX_TOKEN_CHARS = 128
# Repeated texts (queries, re-upserts) skip the work; long texts are not worth the memory.
_CACHE_MAX_TEXT = 1024
_CACHE_MAX_PIECE = 64

STOP_WORDS: frozenset[str] = frozenset(
    # English function words: they match nearly every message.
    "a an and are as at be but by for from has have i if in into is it its of on or "
    "that the their them then there these they this to was were will with".split()
    # Chinese particles and conjunctions.
    + "的 了 是 在 和 与 及 或 也 就 都 而 着 吗 呢 吧 啊 呀 嘛 之 把 被 让".split()
)

_jieba_lock = threading.Lock()
_jieba: jieba.Tokenizer | None = None
_cache_dir: Path | None = None


def configure_tokenizer(cache_dir: Path | None) -> None:
    """Choose where jieba keeps `jieba.cache`. Call before the first tokenize; later calls only
    matter for a process that has not loaded jieba yet. None means the system temp dir."""
    global _cache_dir
    with _jieba_lock:
        _cache_dir = cache_dir


def warm_up() -> None:
    """Load jieba now rather than on the first message (takes ~0.6 s)."""
    _segmenter()


def is_warm() -> bool:
    """Whether jieba's dictionary is loaded (until it is, the first tokenize takes ~0.6 s)."""
    return _jieba is not None


def _segmenter() -> jieba.Tokenizer:
    global _jieba
    seg = _jieba
    if seg is not None:
        return seg
    with _jieba_lock:
        if _jieba is None:
            _quiet_jieba_logger()
            # A private instance, not `jieba.dt`: words someone adds to the global jieba must
            # not change how we segment, or queries stop matching what was indexed earlier.
            tokenizer = jieba.Tokenizer()
            if _cache_dir is not None:
                try:
                    _cache_dir.mkdir(parents=True, exist_ok=True)
                except OSError:
                    pass  # jieba falls back to building the dictionary in memory
                tokenizer.tmp_dir = str(_cache_dir)
            tokenizer.initialize()
            _jieba = tokenizer
        return _jieba


def _quiet_jieba_logger() -> None:
    # jieba attaches its own stderr handler at DEBUG; route its records through the app's
    # logging config instead, and drop its progress chatter.
    logger = logging.getLogger("jieba")
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    logger.setLevel(logging.WARNING)


def clear_caches() -> None:
    """Forget cached tokenizations (benchmarks measuring cold throughput; memory)."""
    for cached in (
        _tokenize_cached,
        _tokenize_query_cached,
        _cjk_piece_cached,
        _technical_piece_cached,
    ):
        cached.cache_clear()


def is_cjk(text: str) -> bool:
    return _CJK_RE.search(text) is not None


def tokenize(text: str) -> list[str]:
    """Tokens of a document, in order, repeats kept (term frequency matters for ranking)."""
    if len(text) <= _CACHE_MAX_TEXT:
        return list(_tokenize_cached(text))
    return _tokenize_document(text)


def tokenize_query(text: str) -> list[str]:
    """Distinct tokens of a query, in order of appearance."""
    if len(text) <= _CACHE_MAX_TEXT:
        return list(_tokenize_query_cached(text))
    return _dedupe(_tokenize_query(text))


def query_units(text: str) -> list[str]:
    """What a user would call the words of the query, in order, without stop words or
    repeats: each technical chunk whole (`src/server/ws.ts`), preceded by its camelCase parts
    (`getUserName` -> `get user name getusername`), each jieba word, and each run of single
    characters jieba could not group (`重连`). Punctuation-separated parts are left out: a
    backend with its own word splitting (Meilisearch) finds those itself, camelCase it does
    not. The whole comes after its parts so that a backend dropping words from the end when
    nothing matches them all (Meilisearch's `last` strategy) gives up the compound first.
    Backends with a word limit trim this list."""
    units: list[str] = []
    for cjk, chunk in _segments(text):
        if cjk:
            units.extend(_cjk_query_units(chunk))
            continue
        whole = _strip_edges(chunk)
        if len(whole) > MAX_TOKEN_CHARS:
            # Too long to be a token itself; its parts still are.
            units.extend(_technical_tokens(chunk))
        elif whole and whole.lower() not in STOP_WORDS:
            units.extend(_camel_parts(whole))
            units.append(whole.lower())
    return _dedupe(units)


def _camel_parts(chunk: str) -> list[str]:
    parts: list[str] = []
    for piece in _SPLIT_INNER_RE.split(" ".join(_SPLIT_OUTER_RE.split(chunk))):
        for word in piece.split():
            camel = [p.lower() for p in _CAMEL_RE.split(word) if p]
            if len(camel) > 1:
                parts.extend(p for p in camel if p not in STOP_WORDS)
    return parts


@lru_cache(maxsize=4096)
def _tokenize_cached(text: str) -> tuple[str, ...]:
    return tuple(_tokenize_document(text))


@lru_cache(maxsize=1024)
def _tokenize_query_cached(text: str) -> tuple[str, ...]:
    return tuple(_dedupe(_tokenize_query(text)))


def _tokenize_document(text: str) -> list[str]:
    out: list[str] = []
    for cjk, chunk in _segments(text):
        if len(chunk) > _CACHE_MAX_PIECE:
            out.extend(_cjk_document_tokens(chunk) if cjk else _technical_tokens(chunk))
        else:
            out.extend(_cjk_piece_cached(chunk) if cjk else _technical_piece_cached(chunk))
    return out


def _tokenize_query(text: str) -> list[str]:
    out: list[str] = []
    for cjk, chunk in _segments(text):
        if cjk:
            _cjk_query_tokens(chunk, out)
        else:
            out.extend(_technical_tokens(chunk))
    return out


# Words, identifiers and short CJK runs recur constantly across messages; caching them per
# piece roughly doubles indexing throughput.
@lru_cache(maxsize=65536)
def _cjk_piece_cached(run: str) -> tuple[str, ...]:
    return tuple(_cjk_document_tokens(run))


@lru_cache(maxsize=65536)
def _technical_piece_cached(chunk: str) -> tuple[str, ...]:
    return tuple(_technical_tokens(chunk))


def _segments(text: str) -> Iterable[tuple[bool, str]]:
    normalized = unicodedata.normalize("NFKC", text)
    for match in _SEGMENT_RE.finditer(normalized):
        cjk_run, other = match.group(1), match.group(2)
        if cjk_run:
            yield True, cjk_run
        else:
            yield False, other


def _jieba_words(run: str) -> list[str]:
    return _segmenter().lcut(run, HMM=False)


def _cjk_document_tokens(run: str) -> list[str]:
    out: list[str] = []
    words = _jieba_words(run)
    # Bigram positions already covered by a two-character jieba word; emitting them again
    # would double their term frequency.
    covered: set[int] = set()
    pos = 0
    for word in words:
        if word not in STOP_WORDS:
            out.append(word)
            if len(word) == 2:
                covered.add(pos)
        pos += len(word)
    for i in range(len(run) - 1):
        if i not in covered:
            bigram = run[i : i + 2]
            if bigram not in STOP_WORDS:
                out.append(bigram)
    return out


def _cjk_query_tokens(run: str, out: list[str]) -> None:
    for unit in _cjk_query_units(run):
        out.append(unit)
        if len(unit) >= 3:
            out.extend(unit[i : i + 2] for i in range(len(unit) - 1))


def _cjk_query_units(run: str) -> list[str]:
    """Jieba words, with consecutive single characters merged (`重 / 连` -> `重连`); stop
    words split the runs and are dropped."""
    units: list[str] = []
    singles: list[str] = []

    def flush() -> None:
        if singles:
            units.append("".join(singles))
            singles.clear()

    for word in _jieba_words(run):
        if word in STOP_WORDS:
            flush()
        elif len(word) == 1:
            singles.append(word)
        else:
            flush()
            units.append(word)
    flush()
    return units


def _strip_edges(chunk: str) -> str:
    return _EDGE_STRIP.sub("", chunk)


def _technical_tokens(chunk: str) -> list[str]:
    """`src/server/ws.ts` -> the path, `src`, `server`, `ws.ts`, `ws`, `ts`; the whole chunk
    always comes first."""
    out: list[str] = []
    _expand(_strip_edges(chunk), out)
    return _dedupe(out)


def _expand(piece: str, out: list[str]) -> None:
    if _PLAIN.fullmatch(piece):
        _add(piece.lower(), out)
        return
    piece = _strip_edges(piece)
    if not piece:
        return
    _add(piece.lower(), out)
    for splitter in (_SPLIT_OUTER_RE, _SPLIT_INNER_RE):
        parts = [p for p in splitter.split(piece) if p]
        # `__init__` splits into just `init`: still a part worth indexing.
        if len(parts) > 1 or (parts and parts[0] != piece):
            for part in parts:
                _expand(part, out)
            return
    camel = [p for p in _CAMEL_RE.split(piece) if p]
    if len(camel) > 1:
        for part in camel:
            _add(part.lower(), out)


def _add(token: str, out: list[str]) -> None:
    if token not in STOP_WORDS and len(token) <= MAX_TOKEN_CHARS:
        out.append(token)


def _dedupe(tokens: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(tokens))
