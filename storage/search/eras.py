"""Era tokens and recent windows: how a search for a very common word stays as cheap at a
million documents as at ten thousand.

tantivy scores every document a term matches to pick the top k (block-WAND cannot prune
equal scores), so a word most documents hold costs time in proportion to history. Each
document therefore carries tokens naming its time (UTC) at four granularities, plus one
marker every such document has; a search restricts its common words to the newest documents
by intersecting them with a union of disjoint eras summing to a bounded number of documents.

Era tokens start with a control character, which our tokenizer never emits (it strips
non-word characters from the edges of every chunk), so no query can match them by accident.
Documents indexed before era tokens existed have none: they are older than every document
that has them, and only the unrestricted search reaches them.
"""

from __future__ import annotations

from calendar import monthrange
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

# In every document with era tokens: its doc_freq is the most a window could ever hold.
ERA_MARK = "\x02e"
# Documents a little in the future (another machine's clock) still land in the window.
CLOCK_SKEW = timedelta(hours=1)
# A walk that has not found enough documents after this many years gives up (documents
# stamped after now + CLOCK_SKEW are never walked, so it may never reach its target).
MAX_YEARS = 30


def era_tokens(when: datetime) -> list[str]:
    t = _utc(when)
    y, m, d, h = t.year, t.month, t.day, t.hour
    return [
        ERA_MARK,
        f"\x02y{y:04d}",
        f"\x02m{y:04d}{m:02d}",
        f"\x02d{y:04d}{m:02d}{d:02d}",
        f"\x02h{y:04d}{m:02d}{d:02d}{h:02d}",
    ]


@dataclass(frozen=True)
class Window:
    """Disjoint era tokens covering the newest `docs` documents (doc_freqs, so deleted but
    unmerged documents count)."""

    tokens: list[str]
    docs: int


def recent_window(doc_freq: Callable[[str], int], target: int, now: datetime) -> Window | None:
    """The newest eras, coarsest first where a whole era fits, together holding at least
    `target` documents; None when every document with era tokens is fewer than that (the
    window would be no smaller than the whole index).

    Walks newest first from `now` + CLOCK_SKEW: an era whose documents all fit under the
    target is taken whole (one token); the one that crosses it is split into its months,
    days or hours, so the window overshoots by less than one hour of documents, and a
    quiet history costs a few lookups of whole years. Plain integers and strings: this runs
    before every search with a common word, and datetime objects cost several times more."""
    if doc_freq(ERA_MARK) < target:
        return None
    top = _utc(now) + CLOCK_SKEW
    walk = _Walk(doc_freq, target)
    for y in range(top.year, top.year - MAX_YEARS, -1):
        if walk.whole(f"\x02y{y:04d}"):
            continue
        for m in range(top.month if y == top.year else 12, 0, -1):
            if walk.whole(f"\x02m{y:04d}{m:02d}"):
                continue
            newest_day = top.day if (y, m) == (top.year, top.month) else monthrange(y, m)[1]
            for d in range(newest_day, 0, -1):
                if walk.whole(f"\x02d{y:04d}{m:02d}{d:02d}"):
                    continue
                newest_hour = top.hour if (y, m, d) == (top.year, top.month, top.day) else 23
                for h in range(newest_hour, -1, -1):
                    if walk.hour(f"\x02h{y:04d}{m:02d}{d:02d}{h:02d}"):
                        return Window(walk.tokens, walk.docs)
    return None


class _Walk:
    def __init__(self, doc_freq: Callable[[str], int], target: int) -> None:
        self._doc_freq = doc_freq
        self._target = target
        self.tokens: list[str] = []
        self.docs = 0

    def whole(self, token: str) -> bool:
        """Take the era if it is empty or fits under the target (an era holding `top` may
        hold a few documents stamped after it: recent enough); False: split it."""
        df = self._doc_freq(token)
        if self.docs + df >= self._target:
            return False
        if df:
            self.tokens.append(token)
            self.docs += df
        return True

    def hour(self, token: str) -> bool:
        """Take the hour (never split); True once the window is complete."""
        df = self._doc_freq(token)
        if df:
            self.tokens.append(token)
            self.docs += df
        return self.docs >= self._target


def _utc(when: datetime) -> datetime:
    # Naive times are UTC throughout storage (SQLite hands them back without a zone).
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
