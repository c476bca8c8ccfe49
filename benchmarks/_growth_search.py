"""Growth figures for search (benchmarks/growth.py's MORE): `/search` as the owner types it,
and WorkHub's candidates with search evidence for a new request, over the filled history.

The fill writes records and Sessions but indexes nothing, so first the history goes into the
app's own tantivy index the way production puts it there: the search followers
(`SourceIndexWorker` over `source_records`, `SessionIndexWorker` over `session_events`, the
production document builders and checkpoints) run until caught up, on the app's
`SearchService`. They read and write in batches of `INDEX_BATCH` rows rather than production's
500 (fewer index commits; the documents are the same), and Session log events for evidence are
one multi-row insert per batch (a quarter as many as messages, spread over the 10k Sessions),
not Bot turns. Both searches then run through production code: `/search` through the command
registry's dispatch (`bot.memory.commands`, the owner's DM, so no scope filter), and evidence
through `WorkHub.candidates(requester, request)` (the 32 candidates, their summaries, then
`gather_evidence` filtered to them).
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from _growth_common import NOW, median_ms
from sqlalchemy import insert, select

from bot.assistant.access import Role
from bot.assistant.commands import CommandContext, CommandRegistry
from bot.assistant.visibility import Visibility
from bot.memory.commands import register_memory_commands
from bot.memory.follower import Follower
from bot.memory.session_index import SessionIndexer, SessionIndexWorker
from bot.memory.source_index import SourceIndexer, SourceIndexWorker
from bot.services import Services
from bot.workhub.service import Requester
from storage.models import Session, SessionEvent

INDEX_BATCH = 5_000
EVENTS_PER_MESSAGE = 0.25
OWNER = "ou_bench_owner"
EVERYTHING = Visibility(everything=True, conversation_id=None)
# Every record holds these words (growth.py's fill): the worst case, every record a hit.
COMMON = "/search launch plan"
# One record's number: past the Session notes' numbers (0 .. a quarter of the messages),
# so exactly one document holds it at every size (4242 was in a note too from 100k on).
RARE = "/search {n}"
REALISTIC = "/search quarterly numbers {n}"  # two words every record holds, one rare
REQUEST = "the budget review for the launch plan"


async def figures(app: Any, messages: int) -> dict[str, float]:
    services: Services = app.services
    events = int(messages * EVENTS_PER_MESSAGE)
    await _fill_session_events(services, events)
    started = time.perf_counter()
    await _catch_up(
        SourceIndexWorker(
            services.db, SourceIndexer(services.db, services.search), "bench", batch=INDEX_BATCH
        )
    )
    await _catch_up(
        SessionIndexWorker(
            services.db, SessionIndexer(services.db, services.search), "bench", batch=INDEX_BATCH
        )
    )
    index_s = time.perf_counter() - started

    unique = messages // 2 + 1
    registry = CommandRegistry()
    register_memory_commands(registry)
    ctx = CommandContext(
        services=services,
        sender_id=OWNER,
        role=Role.OWNER,
        platform="feishu",
        chat_id="oc_bench_owner",
        chat_type="p2p",
        conversation_id=0,
        visibility=EVERYTHING,
    )

    def searching(text: str) -> Any:
        async def run() -> None:
            answer = await registry.dispatch(ctx, text)
            if not str(answer).startswith("Top "):
                raise RuntimeError(f"{text} found nothing: {answer!r}")

        return run

    requester = Requester(conversation_id=0, open_id=OWNER, role=Role.OWNER, visibility=EVERYTHING)

    async def evidence() -> None:
        cset = await services.workhub.candidates(requester, REQUEST)
        found = sum(c.evidence is not None for c in cset.candidates)
        if cset.evidence_status != "ok" or not found:
            raise RuntimeError(f"no evidence among {len(cset.candidates)} candidates")

    return {
        "search index s per 100k rows": index_s * 100_000 / (messages + events),
        "/search (every record matches) ms": await median_ms(searching(COMMON)),
        "/search (one record matches) ms": await median_ms(searching(RARE.format(n=unique))),
        "/search (two common words, one rare) ms": await median_ms(
            searching(REALISTIC.format(n=unique))
        ),
        "WorkHub candidates + evidence ms": await median_ms(evidence),
    }


async def _catch_up(worker: Follower[Any]) -> None:
    """Run a follower until it has nothing left (its checkpoint at the end)."""
    while await worker.run_once():
        pass


async def _fill_session_events(services: Services, count: int) -> None:
    async with services.db.read() as tx:
        ids = list(await tx.scalars(select(Session.id).order_by(Session.id)))
    for start in range(0, count, INDEX_BATCH):
        rows = [
            {
                "session_id": ids[j % len(ids)],
                "seq": j // len(ids) + 1,
                "kind": "user" if j % 2 else "assistant",
                "text": f"note {j}: the budget review, the launch plan and who owns it",
                "payload": None,
                "created_at": NOW - timedelta(seconds=count - j),
            }
            for j in range(start, min(start + INDEX_BATCH, count))
        ]
        async with services.db.write() as tx:
            await tx.execute(insert(SessionEvent), rows)
