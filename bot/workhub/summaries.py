"""Coarse Session summaries, refreshed at completion counts 1, 2, 4, 8, 16, … (invariant 7,
docs/design.md).

A delegated turn that completes with a durable result counts once per notification key.
At each refresh point the summary row asks for a refresh; the SummaryWorker claims it as a
job (several points reached meanwhile coalesce into one), asks the model for a coarse
summary from the previous summary plus bounded new events since `covered_seq`, and stores
it unless a newer generation got there first. Nothing here touches the Session header, so
activity times never move, and the result that triggered the count is never delayed.

The worker also archives, once an hour, the task Sessions that finished (done or cancelled)
and stayed quiet longer than `MAKA_TASK_ARCHIVE_AFTER`: they leave the candidate sets.

Each stored summary also becomes the Session's digest in the search index (the
SESSION_DOCUMENT evidence strategy); `maka search rebuild` writes them all again from the
stored summaries (`rebuild_digests`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import timedelta

from sqlalchemy import select

from bot.agent.framing import quote_data
from bot.host.backoff import error_line
from bot.host.notify import Notifier
from bot.host.workers import Worker
from bot.llm.client import ModelClient
from bot.llm.types import Message, ModelError
from bot.memory.search import SearchService
from bot.workhub.digests import DIGEST_KINDS, MAX_EVENTS, stored_digest
from bot.workhub.evidence import session_digest
from storage.db import Database
from storage.models import Matter, Session
from storage.repos import sessions, workhub
from storage.repos.matters import FINISHED_STATES
from storage.search.tokenizer import query_units, tokenize
from storage.types import utcnow

log = logging.getLogger(__name__)

TOPIC = "summaries"
PURPOSE = "session_summary"  # the model calls' purpose
BATCH = 200
EVENT_CHARS = 400
SUMMARY_CHARS = 600
LEASE = timedelta(minutes=5)
RETRY_AFTER = timedelta(minutes=5)
ARCHIVE_AFTER = timedelta(days=30)  # MAKA_TASK_ARCHIVE_AFTER's default
ARCHIVE_EVERY = 3600.0  # seconds between two archiving steps

INSTRUCTIONS = (
    "Write a coarse summary of this task Session for routing: what it is about, key names, "
    "identifiers and error codes, and where it stands. At most 3 sentences, no preamble. "
    "Keep facts from the previous summary that still hold; prefer the newer events."
)


STALE_SHARE = 0.2  # a request with fewer of its words in the summary is on another topic


def shares_little(request: str, summary: str) -> bool:
    """Does a newly delegated request talk about something the summary does not mention?
    (Then the summary is refreshed at the next completion: invariant 7 in docs/design.md
    leaves topic change open, and this is our answer.)"""
    units = {u.lower() for u in query_units(request) if len(u) > 1}
    if not units or not summary:
        return False
    known = set(tokenize(summary))
    return len(units & known) / len(units) < STALE_SHARE


async def record_completion(
    db: Database, notifier: Notifier, session_id: int, completion_key: str
) -> int | None:
    """Count a completed delegated turn; returns the new count, None for a repeat."""
    async with db.write() as tx:
        done = await workhub.record_completion(tx, session_id, completion_key, utcnow())
    if done is not None and done.refresh:
        await notifier.notify(TOPIC)
    return done.count if done is not None else None


async def rebuild_digests(db: Database, search: SearchService) -> int:
    """Write the digest of every Session with a summary again: its name, the stored summary
    and the newest events the summary covers."""
    count, last_id = 0, 0
    while True:
        docs = []
        async with db.read() as tx:
            summarized = await sessions.summarized_after(tx, last_id, BATCH)
            for header, summary in summarized:
                docs.append(await stored_digest(tx, header, summary))
        if not summarized:
            return count
        last_id = summarized[-1][0].id
        if not await search.upsert(docs):
            raise RuntimeError("the search backend refused documents; see the log")
        count += len(docs)


class SummaryWorker(Worker):
    name = "workhub-summaries"
    topics = (TOPIC,)

    def __init__(
        self,
        db: Database,
        model: ModelClient,
        search: SearchService,
        instance_id: str,
        *,
        archive_after: timedelta = ARCHIVE_AFTER,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.db, self.model, self.search, self.owner = db, model, search, instance_id
        self.archive_after, self.clock = archive_after, clock
        self._next_archive = clock()  # the first cycle archives

    async def run_once(self) -> bool:
        if self.clock() >= self._next_archive:
            await self.archive()
        async with self.db.read() as tx:
            if not await workhub.has_refresh(tx, utcnow()):
                return False
        async with self.db.write() as tx:
            job = await workhub.claim_refresh(tx, owner=self.owner, now=utcnow(), lease=LEASE)
            if job is None:
                return False
            session_id, previous = job.session_id, job.text or ""
            covered, for_count = job.covered_seq, job.requested_at_count
            header = await tx.get(Session, session_id)
            name = header.name if header else f"Session {session_id}"
            objective = await tx.scalar(
                select(Matter.objective).where(Matter.session_id == session_id)
            )
            events = await sessions.events_after(tx, session_id, covered, DIGEST_KINDS)
        events = events[-MAX_EVENTS:]
        if not events:
            async with self.db.write() as tx:
                await workhub.settle_refresh(tx, session_id, self.owner, for_count)
            return True
        try:
            text = await self._summarize(name, objective or "", previous, [e.text for e in events])
        except Exception as exc:  # the model's or not: recorded, and tried after RETRY_AFTER
            error = str(exc) if isinstance(exc, ModelError) else error_line(exc)
            log.warning("summary of Session %s failed, retrying later: %s", session_id, error)
            async with self.db.write() as tx:
                await workhub.postpone_refresh(
                    tx, session_id, self.owner, error=error, retry_at=utcnow() + RETRY_AFTER
                )
            return True
        async with self.db.write() as tx:
            stored = await workhub.store_summary(
                tx,
                session_id,
                self.owner,
                text=text,
                covered_seq=events[-1].seq,
                for_count=for_count,
                now=utcnow(),
            )
        if stored:
            await self.search.upsert(
                [session_digest(str(session_id), name, text, [e.text for e in events])]
            )
        return True

    async def archive(self) -> int:
        """Archive finished tasks quiet longer than `archive_after`; how many."""
        self._next_archive = self.clock() + ARCHIVE_EVERY
        async with self.db.write() as tx:
            archived = await workhub.archive_quiet(
                tx, FINISHED_STATES, utcnow() - self.archive_after
            )
        if archived:
            log.info("archived %d finished task Session(s)", archived)
        return archived

    async def _summarize(self, name: str, objective: str, previous: str, texts: list[str]) -> str:
        body = "\n".join(f"- {t[:EVENT_CHARS]}" for t in texts)
        prompt = [
            Message.system(INSTRUCTIONS),
            Message.user(
                f"Session: {name}\n"
                + (quote_data("objective", objective[:EVENT_CHARS]) + "\n" if objective else "")
                + (quote_data("previous summary", previous) + "\n" if previous else "")
                + quote_data("new events", body)
            ),
        ]
        completion = await self.model.complete(prompt, purpose=PURPOSE)
        return " ".join((completion.text or "").split())[:SUMMARY_CHARS]
