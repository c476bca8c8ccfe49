"""Search evidence for candidates: a weak, capped signal (invariant 8, docs/design.md).

The search is filtered to the candidates' ids, and any hit outside them is dropped anyway:
search never widens the set. Zero hits never removes a candidate. When search fails, the
set carries `evidence_status="unavailable"` and routing proceeds on metadata alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from bot.config import EvidenceStrategy
from bot.workhub.candidates import Evidence
from storage.search import SearchDocument, SearchFilters, SearchHit

EVIDENCE_CAP = 0.8  # never conclusive on its own
MAX_EXCERPTS = 3
EXCERPT_CHARS = 200
DIGEST_CHARS = 4000
# Tool output is only in the index when MAKA_INDEX_TOOL_OUTPUT is on.
MESSAGE_KINDS = ("session_user", "session_assistant", "session_tool_result")
DIGEST_KIND = "session_digest"


class Searcher(Protocol):
    async def try_search(
        self, query: str, filters: SearchFilters | None = None, limit: int = 10
    ) -> list[SearchHit] | None: ...


async def gather_evidence(
    searcher: Searcher, query: str, session_ids: Sequence[str], strategy: EvidenceStrategy
) -> tuple[dict[str, Evidence], str]:
    """(evidence per Session id, status) where status is "ok" or "unavailable"."""
    if not session_ids or not query.strip():
        return {}, "ok"
    if strategy is EvidenceStrategy.SESSION_DOCUMENT:
        filters = SearchFilters(session_ids=list(session_ids), kinds=[DIGEST_KIND])
        limit = len(session_ids)
    else:
        filters = SearchFilters(session_ids=list(session_ids), kinds=list(MESSAGE_KINDS))
        limit = min(200, 4 * len(session_ids))
    hits = await searcher.try_search(query, filters, limit)
    if hits is None:
        return {}, "unavailable"
    allowed = set(session_ids)
    grouped: dict[str, list[SearchHit]] = {}
    for hit in hits:
        if hit.session_id in allowed:
            grouped.setdefault(hit.session_id, []).append(hit)
    return {sid: _evidence(found) for sid, found in grouped.items()}, "ok"


def _evidence(hits: list[SearchHit]) -> Evidence:
    hits = sorted(hits, key=lambda h: h.score, reverse=True)
    excerpts: list[str] = []
    for hit in hits:
        if len(excerpts) == MAX_EXCERPTS:
            break
        for excerpt in hit.excerpts:
            clipped = " ".join(excerpt.split())[:EXCERPT_CHARS]
            if clipped and clipped not in excerpts and len(excerpts) < MAX_EXCERPTS:
                excerpts.append(clipped)
    best = max(0.0, min(hits[0].score, EVIDENCE_CAP))
    return Evidence(score=best, excerpts=tuple(excerpts))


def digest_id(session_id: str) -> str:
    return f"session-digest:{session_id}"


def session_digest(
    session_id: str, name: str, summary: str | None, recent_texts: Sequence[str]
) -> SearchDocument:
    """The bounded per-Session document of the SESSION_DOCUMENT strategy: name, summary, then
    the newest messages until the budget is spent."""
    parts = [name, summary or ""]
    budget = DIGEST_CHARS - sum(len(p) for p in parts)
    for text in reversed(recent_texts):
        if budget <= 0:
            break
        piece = text[:budget]
        parts.append(piece)
        budget -= len(piece)
    return SearchDocument(
        id=digest_id(session_id),
        kind=DIGEST_KIND,
        text="\n".join(parts),
        title=name,
        session_id=session_id,
    )
