"""The evaluation's summaries, made as the running service makes them: each snapshot's
Sessions and their messages go into a scratch SQLite database, their completed turns are
counted one by one (`summaries.record_completion`), and a real `SummaryWorker` refreshes the
summaries at the points it chooses (1, 2, 4, 8 …) and writes each Session's digest into the
snapshot's search index, as it does in the service (the SESSION_DOCUMENT evidence).

What is not the product's: the model. It answers every summary request with the summary the
dataset gives for that Session (the snapshot's truth at its `now`), so what is measured is
routing, not a model's writing. `calls` counts the model calls the worker made (the client
records each with its purpose), not a formula: a refresh with nothing new to read makes none.

A Session's messages are spread evenly over its completed turns (the k-th of n completions
comes after the first k/n of its messages): the dataset has no finer history.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select

from bot.host.notify import Notifier
from bot.llm.client import MemoryRecorder, ModelClient
from bot.llm.scripted import PlannedReply, ScriptedProvider
from bot.llm.types import Message, ToolSpec
from bot.memory.search import SearchService
from bot.workhub.summaries import PURPOSE, SummaryWorker, record_completion
from storage.db import create_database
from storage.migrate import migrate
from storage.models import Session, SessionSummary
from storage.repos import sessions
from storage.search import SearchDocument
from storage.types import utcnow
from storage.urls import normalize_database_url

EVENT_KINDS = {"user": "user", "assistant": "assistant", "tool": "tool_result"}


@dataclass(frozen=True)
class SessionHistory:
    """What the dataset says about one Session."""

    id: str
    name: str
    summary: str | None
    completions: int
    messages: Sequence[tuple[str, str, datetime]]  # (role, text, at), oldest first


@dataclass(frozen=True)
class SummaryRun:
    summaries: dict[str, str]  # dataset Session id -> the summary the worker stored
    calls: int  # model calls the worker made


class _DatasetIds(SearchService):
    """The snapshot's search index, where the worker's digests arrive under the dataset's
    Session ids (the scratch database numbers Sessions its own way)."""

    def __init__(self, search: SearchService, ids: dict[str, str]) -> None:
        super().__init__(search.index)
        self.ids = ids

    async def upsert(self, docs: Sequence[SearchDocument]) -> bool:
        renamed = [
            dataclasses.replace(
                d,
                id=f"session-digest:{self.ids[d.session_id]}",
                session_id=self.ids[d.session_id],
            )
            if d.session_id in self.ids
            else d
            for d in docs
        ]
        return await super().upsert(renamed)


async def summarize(
    histories: Sequence[SessionHistory], search: SearchService, workdir: Path
) -> SummaryRun:
    """Run the summary worker over these Sessions' completed turns (see the module
    docstring); the digests go into `search`."""
    db = create_database(normalize_database_url(f"sqlite:///{workdir / 'summaries.db'}"))
    try:
        await migrate(db)
        answer = [""]  # what the model says next: the Session being summarized's summary

        def dataset_summary(_messages: list[Message], _tools: list[ToolSpec]) -> PlannedReply:
            return ScriptedProvider.text(answer[0])

        provider, recorder = ScriptedProvider(), MemoryRecorder()
        ids: dict[str, str] = {}
        worker = SummaryWorker(
            db, ModelClient(provider, recorder), _DatasetIds(search, ids), "evaluation"
        )
        for history in (h for h in histories if h.completions and h.summary):
            answer[0] = history.summary or ""
            async with db.write() as tx:
                row = Session(name=history.name, state="active", labels=[], is_archived=False)
                tx.add(row)
                await tx.flush()
                session_id = row.id
            ids[str(session_id)] = history.id
            shown = 0
            for k in range(1, history.completions + 1):
                upto = math.ceil(k * len(history.messages) / history.completions)
                turn: list[tuple[str, str, dict[str, Any] | None]] = [
                    (EVENT_KINDS.get(role, "user"), text, None)
                    for role, text, _at in history.messages[shown:upto]
                ]
                shown = upto
                if turn:
                    async with db.write() as tx:
                        await sessions.append_events(tx, session_id, turn, utcnow())
                await record_completion(db, Notifier(), session_id, f"evaluation:{k}")
                while True:
                    if not provider.remaining:
                        provider.add(dataset_summary)
                    if not await worker.run_once():
                        break
        async with db.read() as tx:
            stored = (
                await tx.execute(
                    select(SessionSummary.session_id, SessionSummary.text).where(
                        SessionSummary.text.is_not(None)
                    )
                )
            ).all()
        return SummaryRun(
            summaries={ids[str(sid)]: str(text) for sid, text in stored},
            calls=sum(1 for c in recorder.calls if c.purpose == PURPOSE),
        )
    finally:
        await db.dispose()
