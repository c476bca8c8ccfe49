"""The evaluation's summaries come from a real SummaryWorker run: its summary calls are the
model calls the worker made (a refresh with nothing new to read makes none), and the digests
it writes let the `session_document` evidence strategy be evaluated at all."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from bot.config import EvidenceStrategy
from bot.workhub.evaluation import Dataset, evaluate

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def session(sid: str, name: str, summary: str, texts: list[str], **kw: Any) -> dict[str, Any]:
    return {
        "id": sid,
        "name": name,
        "workspace": "infra",
        "state": "active",
        "created_at": (NOW - timedelta(days=3)).isoformat(),
        "last_message_at": (NOW - timedelta(hours=1)).isoformat(),
        "summary": summary,
        "messages": [
            {"role": "user", "text": t, "at": (NOW - timedelta(hours=2)).isoformat()} for t in texts
        ],
        **kw,
    }


def dataset(*sessions: dict[str, Any], request: str, expect: str) -> Dataset:
    return Dataset.model_validate(
        {
            "schema": "maka.recall-eval.v1",
            "snapshots": {"snap": {"now": NOW.isoformat(), "sessions": list(sessions)}},
            "cases": [
                {
                    "id": "case-1",
                    "snapshot": "snap",
                    "request": request,
                    "expect": {"outcome": "existing", "session_id": expect},
                }
            ],
        }
    )


async def test_summary_calls_are_the_calls_a_summary_worker_run_made() -> None:
    # Five completed turns over two messages: refreshes are due at 1, 2 and 4, but at 2
    # nothing new was logged since the first summary, so the worker makes no call then.
    data = dataset(
        session(
            "s-export",
            "nightly export",
            "The nightly export job is slow.",
            ["the export takes 14 minutes", "profiled it: the zip step"],
            completion_count=5,
        ),
        request="the nightly export",
        expect="s-export",
    )
    report = await evaluate(data)
    variants = report["variants"]
    assert variants["baseline"]["summary_calls"] == 0
    assert variants["summaries"]["summary_calls"] == 2  # the formula said 3 (1, 2, 4)
    assert variants["summaries_evidence"]["summary_calls"] == 2


async def test_session_document_evidence_can_be_evaluated() -> None:
    data = dataset(
        session("s-a", "customer portal", "Work on the portal.", ["ERR_CONN_RESET on login"]),
        session("s-b", "billing", "Billing questions.", ["invoice totals are off by one cent"]),
        request="continue the ERR_CONN_RESET login fix",
        expect="s-a",
    )
    report = await evaluate(data, strategy=EvidenceStrategy.SESSION_DOCUMENT)
    best = report["variants"]["summaries_evidence"]
    assert best["bytes_read"] > 0  # the digests the worker wrote were found
    [case] = report["cases"]
    assert case["summaries_evidence"]["verdict"] == "correct", case
    assert case["summaries"]["verdict"] != "correct"  # the digest's evidence made it
