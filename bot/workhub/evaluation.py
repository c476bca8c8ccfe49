"""`maka eval recall`: how well requests are routed, under three variants (docs/design.md,
"Measuring routing").

- baseline: name, workspace, state, time
- summaries: baseline plus each Session's summary
- summaries_evidence: plus search evidence from the Session's messages (what the service
  runs: `tasks_candidates` gives the Bot this set and Recall's proposal)

What is the product's code: the candidate set is assembled by `workhub.service.assemble`
(evidence, the 32, refs) and routed by `Recall.propose`, exactly as `tasks_candidates` does;
the summaries (and the Session digests the `session_document` evidence searches) are made
by a real `SummaryWorker` run over each snapshot's completed turns (`eval_summaries.py`).
What is not: the Sessions come from the snapshot instead of the database, the summarizing
model answers with the dataset's summaries, and each snapshot's messages go into a fresh
embedded search index (the same tokenizer and backend).

Figures: latency covers assembling the set (with its search) and routing (a model call
included); `bytes_read` is the log text the evidence search returned; `model_input_chars`
is what the router is given (for the model router, its whole prompt); `summary_calls` is
the model calls the SummaryWorker made for the sessions' completed turns; model
fallbacks (the reference router answering for a failed model) are counted apart and never
scored as the model's decisions.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from bot.config import EvidenceStrategy, RecallMode
from bot.memory.search import SearchService
from bot.workhub.candidates import CandidateSet, SessionMeta
from bot.workhub.eval_summaries import SessionHistory, summarize
from bot.workhub.evidence import Searcher
from bot.workhub.recall import Recall
from bot.workhub.router import Decision, Outcome
from bot.workhub.service import assemble
from storage.search import SearchDocument, SearchFilters, SearchHit
from storage.search.embedded import EmbeddedSearchIndex

VARIANTS = ("baseline", "summaries", "summaries_evidence")
MESSAGE_CHARS = 2000
MESSAGES_PER_SESSION = 300
ROLE_KINDS = {
    "user": "session_user",
    "assistant": "session_assistant",
    "tool": "session_tool_result",
}


class _Message(BaseModel):
    role: str
    text: str
    at: datetime


class _Session(BaseModel):
    model_config = ConfigDict(extra="ignore")
    id: str
    name: str
    workspace: str | None = None
    state: str
    role: str | None = None
    is_archived: bool = False
    subagent_parent: str | None = None
    labels: list[str] = Field(default_factory=list)
    created_at: datetime
    status_updated_at: datetime | None = None
    last_message_at: datetime | None = None
    summary: str | None = None
    # completed turns; a summary without a count was made once
    completion_count: int | None = None
    messages: list[_Message] = Field(default_factory=list)

    @property
    def completions(self) -> int:
        return (
            self.completion_count if self.completion_count is not None else int(bool(self.summary))
        )


class _Snapshot(BaseModel):
    now: datetime
    sessions: list[_Session]


class _Expect(BaseModel):
    outcome: Outcome
    session_id: str | None = None


class _Case(BaseModel):
    id: str
    snapshot: str
    request: str
    expect: _Expect
    tags: list[str] = Field(default_factory=list)


class Dataset(BaseModel):
    schema_: str = Field(alias="schema")
    snapshots: dict[str, _Snapshot]
    cases: list[_Case]


@dataclass
class VariantReport:
    cases: int = 0
    correct: int = 0
    wrong: int = 0
    clarified: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    bytes_read: int = 0
    model_input_chars: int = 0
    summary_calls: int = 0
    fallbacks: int = 0

    def as_dict(self) -> dict[str, Any]:
        n = max(self.cases, 1)
        lat = sorted(self.latencies_ms) or [0.0]
        return {
            "cases": self.cases,
            "correct_target_rate": round(self.correct / n, 4),
            "wrong_target_rate": round(self.wrong / n, 4),
            "clarification_rate": round(self.clarified / n, 4),
            "p50_ms": round(statistics.median(lat), 3),
            "p95_ms": round(lat[min(len(lat) - 1, int(0.95 * len(lat)))], 3),
            "bytes_read": self.bytes_read,
            "model_input_chars": self.model_input_chars,
            "summary_calls": self.summary_calls,
            "model_fallbacks": self.fallbacks,
        }


def load_dataset(path: Path) -> Dataset:
    dataset = Dataset.model_validate(json.loads(path.read_text(encoding="utf-8")))
    if dataset.schema_ != "maka.recall-eval.v1":
        raise ValueError(f"unknown dataset schema {dataset.schema_!r}")
    missing = {c.snapshot for c in dataset.cases} - set(dataset.snapshots)
    if missing:
        raise ValueError(f"cases refer to unknown snapshots: {sorted(missing)}")
    return dataset


async def evaluate(
    dataset: Dataset,
    *,
    strategy: EvidenceStrategy = EvidenceStrategy.BEST_MESSAGE,
    recall: Recall | None = None,
) -> dict[str, Any]:
    recall = recall or Recall(RecallMode.REFERENCE, None, UTC)
    reports = {v: VariantReport() for v in VARIANTS}
    per_case: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="maka-eval-") as tmp:
        for snap_id, snapshot in dataset.snapshots.items():
            search = SearchService(EmbeddedSearchIndex(Path(tmp) / snap_id))
            try:
                await _index_snapshot(search, snapshot)
                workdir = Path(tmp) / f"{snap_id}-summaries"
                workdir.mkdir()
                made = await summarize(histories(snapshot), search, workdir)
                for variant in VARIANTS[1:]:
                    reports[variant].summary_calls += made.calls
                for case in (c for c in dataset.cases if c.snapshot == snap_id):
                    per_case.append(
                        await _run_case(
                            case, snapshot, made.summaries, search, reports, strategy, recall
                        )
                    )
            finally:
                await search.close()
    return {"variants": {v: r.as_dict() for v, r in reports.items()}, "cases": per_case}


async def _index_snapshot(search: SearchService, snapshot: _Snapshot) -> None:
    docs = [
        SearchDocument(
            id=f"{s.id}:{i}",
            kind=ROLE_KINDS.get(m.role, "session_user"),
            text=m.text[:MESSAGE_CHARS],
            title=s.name,
            session_id=s.id,
            time=m.at,
        )
        for s in snapshot.sessions
        for i, m in enumerate(s.messages[-MESSAGES_PER_SESSION:])
    ]
    if docs and not await search.upsert(docs):
        raise RuntimeError("could not index the snapshot's messages")


def histories(snapshot: _Snapshot) -> list[SessionHistory]:
    return [
        SessionHistory(
            id=s.id,
            name=s.name,
            summary=s.summary,
            completions=s.completions,
            messages=[(m.role, m.text, m.at) for m in s.messages],
        )
        for s in snapshot.sessions
    ]


def session_metas(snapshot: _Snapshot) -> list[SessionMeta]:
    return [
        SessionMeta(
            id=s.id,
            name=s.name,
            workspace=s.workspace,
            state=s.state,
            created_at=s.created_at,
            status_updated_at=s.status_updated_at,
            last_message_at=s.last_message_at,
            role=s.role,
            is_archived=s.is_archived,
            subagent_parent=s.subagent_parent,
            labels=tuple(s.labels),
        )
        for s in snapshot.sessions
    ]


async def _run_case(
    case: _Case,
    snapshot: _Snapshot,
    summaries_all: dict[str, str],
    search: SearchService,
    reports: dict[str, VariantReport],
    strategy: EvidenceStrategy,
    recall: Recall,
) -> dict[str, Any]:
    result: dict[str, Any] = {"id": case.id, "expect": case.expect.model_dump(mode="json")}
    metas = session_metas(snapshot)
    for variant in VARIANTS:
        reader = _CountingSearcher(search)
        started = time.perf_counter()
        cset = await assemble(
            metas,
            summaries_all if variant != "baseline" else {},
            reader,
            case.request if variant == "summaries_evidence" else None,
            strategy,
            now=snapshot.now,
            tz=UTC,
        )
        decision = await recall.propose(case.request, cset)
        elapsed = (time.perf_counter() - started) * 1000
        assert decision is not None  # the evaluation never runs with recall off
        report = reports[variant]
        report.cases += 1
        report.latencies_ms.append(elapsed)
        report.bytes_read += reader.bytes_read
        report.model_input_chars += _router_input_chars(recall, case.request, cset)
        verdict = "fallback" if decision.fallback else _score(case.expect, decision)
        if verdict == "fallback":
            report.fallbacks += 1
        elif verdict == "correct":
            report.correct += 1
        elif verdict == "wrong":
            report.wrong += 1
        if decision.outcome is Outcome.CLARIFY and not decision.fallback:
            report.clarified += 1
        result[variant] = {
            "outcome": decision.outcome.value,
            "session_id": decision.session_id,
            "verdict": verdict,
            "reason": decision.reason,
        }
    return result


class _CountingSearcher:
    """The evidence search, counting the log text it returned."""

    def __init__(self, search: Searcher) -> None:
        self.search, self.bytes_read = search, 0

    async def try_search(
        self, query: str, filters: SearchFilters | None = None, limit: int = 10
    ) -> list[SearchHit] | None:
        hits = await self.search.try_search(query, filters, limit)
        for hit in hits or []:
            self.bytes_read += sum(len(e.encode()) for e in hit.excerpts)
        return hits


def _router_input_chars(recall: Recall, request: str, cset: CandidateSet) -> int:
    """What the router reads: the model router its whole prompt; the reference router the
    request and each candidate's name, workspace, summary and evidence excerpts."""
    if recall.mode is RecallMode.MODEL and recall.model_router is not None:
        return sum(len(m.content or "") for m in recall.model_router.prompt(request, cset))
    return len(request) + sum(
        len(c.meta.name)
        + len(c.meta.workspace or "")
        + len(c.summary or "")
        + sum(len(e) for e in (c.evidence.excerpts if c.evidence else ()))
        for c in cset.candidates
    )


def _score(expect: _Expect, decision: Decision) -> str:
    if decision.outcome is expect.outcome:
        if expect.outcome is not Outcome.EXISTING or decision.session_id == expect.session_id:
            return "correct"
        return "wrong"
    if decision.outcome is Outcome.EXISTING:
        return "wrong"  # routed somewhere while a new task or a question was right
    if decision.outcome is Outcome.CLARIFY:
        return "clarified"
    return "wrong"


def table(report: dict[str, Any]) -> str:
    head = (
        f"{'variant':20} {'correct':>8} {'wrong':>7} {'clarify':>8} {'p50 ms':>8} "
        f"{'p95 ms':>8} {'bytes':>10} {'model chars':>12} {'summary calls':>14} "
        f"{'fallbacks':>10}"
    )
    lines = [head, "-" * len(head)]
    for name, v in report["variants"].items():
        lines.append(
            f"{name:20} {v['correct_target_rate']:>8.1%} {v['wrong_target_rate']:>7.1%} "
            f"{v['clarification_rate']:>8.1%} {v['p50_ms']:>8.2f} {v['p95_ms']:>8.2f} "
            f"{v['bytes_read']:>10} {v['model_input_chars']:>12} {v['summary_calls']:>14} "
            f"{v['model_fallbacks']:>10}"
        )
    return "\n".join(lines)
