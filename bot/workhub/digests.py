"""A Session's digest in the search index (the SESSION_DOCUMENT evidence strategy), made from
what is stored now: its name, its WorkHub summary and the newest events the summary covers.
Written by the summary worker, by `maka search rebuild`, and by the Session-log follower
when a redaction took words out of the Session (a dropped summary: its digest goes too)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.workhub.evidence import digest_id, session_digest
from storage.models import Session, SessionSummary
from storage.repos import sessions
from storage.search import SearchDocument

MAX_EVENTS = 40
DIGEST_KINDS = ("user", "assistant", "status")  # what a summary (and a digest) is made from


async def stored_digest(
    tx: AsyncSession, header: Session, summary: SessionSummary
) -> SearchDocument:
    events = await sessions.recent_events(
        tx, header.id, DIGEST_KINDS, summary.covered_seq, MAX_EVENTS
    )
    return session_digest(str(header.id), header.name, summary.text, [e.text for e in events])


async def digests_of(
    tx: AsyncSession, session_ids: Sequence[int]
) -> tuple[list[SearchDocument], list[str]]:
    """These Sessions' digests as stored now: (the documents to write, the ids of those to
    delete: a Session with no summary has no digest)."""
    rows = (
        await tx.execute(
            select(Session, SessionSummary)
            .join(SessionSummary, SessionSummary.session_id == Session.id)
            .where(Session.id.in_(list(session_ids)), SessionSummary.text.is_not(None))
        )
    ).all()
    docs = [await stored_digest(tx, header, summary) for header, summary in rows]
    written = {header.id for header, _ in rows}
    return docs, [digest_id(str(s)) for s in session_ids if s not in written]
