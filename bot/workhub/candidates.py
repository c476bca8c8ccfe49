"""The candidate set: the 32 most recent eligible Sessions a request may be routed to.

Eligible (invariant 5 in docs/design.md): not archived, not the coordination Session (no
`role`), no `subagent_parent`, no `mode:side_conversation` label; after the requester's access
filter. Ordered by `last_message_at ?? status_updated_at ?? created_at` descending, ties by id
ascending; at most 32. Nothing outside those 32 is ever added back, by search or anything else.

`candidate_set_id` (invariant 6 in docs/design.md) hashes the ordered identity fields (id,
name, workspace, state, activity time): a new summary or search score leaves it unchanged, a
rename or new activity changes it. Models see per-set refs, never raw Session ids.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo

MAX_CANDIDATES = 32
SIDE_CONVERSATION = "mode:side_conversation"


@dataclass(frozen=True)
class SessionMeta:
    id: str
    name: str
    workspace: str | None
    state: str
    created_at: datetime
    status_updated_at: datetime | None = None
    last_message_at: datetime | None = None
    role: str | None = None
    is_archived: bool = False
    subagent_parent: str | None = None
    labels: tuple[str, ...] = ()

    @property
    def activity_at(self) -> datetime:
        return self.last_message_at or self.status_updated_at or self.created_at

    @property
    def eligible(self) -> bool:
        return (
            not self.is_archived
            and self.role is None
            and self.subagent_parent is None
            and SIDE_CONVERSATION not in self.labels
        )


@dataclass(frozen=True)
class Evidence:
    score: float  # normalized and capped, in [0, EVIDENCE_CAP]
    excerpts: tuple[str, ...]


@dataclass(frozen=True)
class Candidate:
    ref: str
    position: int  # 1 = most recent
    meta: SessionMeta
    recency: str  # today | this week | older
    summary: str | None = None
    evidence: Evidence | None = None


@dataclass(frozen=True)
class CandidateSet:
    set_id: str
    candidates: tuple[Candidate, ...]
    evidence_status: str = "none"  # none (no query) | ok | unavailable

    def by_ref(self, ref: str) -> Candidate | None:
        return next((c for c in self.candidates if c.ref == ref), None)

    @property
    def ids(self) -> list[str]:
        return [c.meta.id for c in self.candidates]


@dataclass
class CandidateView:
    """What the model reads about one candidate (rendered as JSON by the tools)."""

    ref: str
    name: str
    workspace: str | None
    state: str
    last_activity: str
    recency: str
    position: int
    summary: str | None = None
    evidence: dict[str, object] | None = field(default=None)


def select_candidates(sessions: Iterable[SessionMeta]) -> list[SessionMeta]:
    eligible = [s for s in sessions if s.eligible]
    # Most recent first; among equal times the lower id first (stable and explainable).
    eligible.sort(key=lambda s: s.id)
    eligible.sort(key=lambda s: s.activity_at, reverse=True)
    return eligible[:MAX_CANDIDATES]


def candidate_set_id(ordered: Sequence[SessionMeta]) -> str:
    identity = [[s.id, s.name, s.workspace, s.state, s.activity_at.isoformat()] for s in ordered]
    blob = json.dumps(identity, ensure_ascii=False, separators=(",", ":"))
    return "cs_" + hashlib.sha256(blob.encode()).hexdigest()[:20]


def candidate_ref(set_id: str, session_id: str) -> str:
    """Opaque and per set: the same Session has another ref in another set."""
    return "t_" + hashlib.sha256(f"{set_id}|{session_id}".encode()).hexdigest()[:8]


def recency_bucket(at: datetime, now: datetime, tz: tzinfo) -> str:
    local_day = at.astimezone(tz).date()
    today = now.astimezone(tz).date()
    if local_day == today:
        return "today"
    if today - local_day < timedelta(days=7):
        return "this week"
    return "older"


def build_set(
    sessions: Iterable[SessionMeta],
    *,
    now: datetime,
    tz: tzinfo,
    summaries: dict[str, str] | None = None,
    evidence: dict[str, Evidence] | None = None,
    evidence_status: str = "none",
) -> CandidateSet:
    ordered = select_candidates(sessions)
    set_id = candidate_set_id(ordered)
    summaries, evidence = summaries or {}, evidence or {}
    candidates = tuple(
        Candidate(
            ref=candidate_ref(set_id, s.id),
            position=i + 1,
            meta=s,
            recency=recency_bucket(s.activity_at, now, tz),
            summary=summaries.get(s.id),
            evidence=evidence.get(s.id),
        )
        for i, s in enumerate(ordered)
    )
    return CandidateSet(set_id, candidates, evidence_status)


def view(candidate: Candidate, tz: tzinfo) -> CandidateView:
    ev = candidate.evidence
    return CandidateView(
        ref=candidate.ref,
        name=candidate.meta.name,
        workspace=candidate.meta.workspace,
        state=candidate.meta.state,
        last_activity=candidate.meta.activity_at.astimezone(tz).strftime("%Y-%m-%d %H:%M"),
        recency=candidate.recency,
        position=candidate.position,
        summary=candidate.summary,
        evidence={"score": round(ev.score, 2), "excerpts": list(ev.excerpts)} if ev else None,
    )
