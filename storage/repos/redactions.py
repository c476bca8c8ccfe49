"""Redaction: a message taken back (recalled by its sender, or forgotten by the owner) leaves
what the Bot's turns kept of it. One rule for both (bot/channels/recalls.py,
bot/forget/batch.py), in the caller's transaction:
- each `user` event that showed its inbox item to the model is redacted in place (the one
  exception to the append-only log), so later turns' history and `memory_original` no longer
  read it;
- the `assistant` event the same turn logged right after it, and the turn's replies in the
  outbox: an answer may repeat the words it answered (a turn answering several messages
  loses its whole answer: which words came from which message is not known);
- the conversation's history summaries (`summary` events) covering that turn are withdrawn,
  and the WorkHub summaries of the conversation's Sessions generated since the message came
  are dropped and asked for again, to be written from the redacted log.
A REDACTION event is appended after each redacted event, and to each Session whose WorkHub
summary was dropped: the search follower, which reads events once in id order, replaces the
indexed text and writes the Session's digest again from what is stored now.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, Text, and_, or_, select, update
from sqlalchemy import cast as sql_cast
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import (
    OutboxMessage,
    Session,
    SessionEvent,
    SessionSummary,
)
from storage.repos import outbox, reply_keys
from storage.repos.sessions import append_events
from storage.repos.taken_back import Recalled

REDACTION = "redaction"  # an event that says another's text was redacted: the search follower
RECALLED_TEXT = "(recalled by its sender)"  # re-indexes the redacted text under the other's id
WITHDRAWN_ANSWER = "(a reply to a message since taken back)"
WITHDRAWN_SUMMARY = "(summary withdrawn: it covered a message since taken back)"
NO_REPLY = "(no reply sent)"  # what a turn that sent nothing logs as its answer: no words
# The lease a dropped WorkHub summary is left with: free at once for the next claim, and not
# the owner a generation already under way (made from the unredacted log) must be to store.
VOIDED_BY = "redaction"

_SESSIONS = cast(Table, Session.__table__)
_EVENTS = cast(Table, SessionEvent.__table__)


@dataclass
class Redacted:
    """What one redaction changed."""

    logs: int = 0  # `user` events that showed the message
    answers: int = 0  # the turns' `assistant` events and outbox replies
    summaries: int = 0  # history summaries withdrawn, WorkHub summaries dropped


def redacted(text: str, payload: dict[str, Any], item_id: int, words: Sequence[str]) -> str:
    """`text` (a turn's user event) without the words of inbox item `item_id`: its span (the
    turn logs each item's, `spans`) becomes its header and RECALLED_TEXT; an event logged
    without spans has every occurrence of `words` replaced instead. `payload`'s spans are
    moved to match."""
    spans = payload.get("spans")
    span = spans.get(str(item_id)) if isinstance(spans, dict) else None
    if not (isinstance(span, list) and len(span) == 2 and 0 <= span[0] <= span[1] <= len(text)):
        for word in sorted({w for w in words if w.strip()}, key=len, reverse=True):
            text = text.replace(word, RECALLED_TEXT)
        return text
    start, end = int(span[0]), int(span[1])
    chunk = text[start:end]
    header = chunk[: chunk.find(": ") + 2] if ": " in chunk else ""
    replacement = header + RECALLED_TEXT
    shift = len(replacement) - (end - start)
    assert isinstance(spans, dict)
    for key, other in spans.items():
        if isinstance(other, list) and len(other) == 2 and other[0] >= end:
            spans[key] = [other[0] + shift, other[1] + shift]
    spans[str(item_id)] = [start, start + len(replacement)]
    return text[:start] + replacement + text[end:]


async def redact_message_item(tx: AsyncSession, item: Recalled, now: datetime) -> Redacted:
    """`redact_item` for a message's item as a recall or a forget read it; nothing when the
    message never reached a conversation."""
    if item.item_id is None or item.conversation_id is None or item.created_at is None:
        return Redacted()
    return await redact_item(
        tx,
        item.conversation_id,
        item.item_id,
        since=item.created_at,
        words=item.words,
        turn_key=item.turn_key,
        now=now,
    )


async def redact_item(
    tx: AsyncSession,
    conversation_id: int,
    item_id: int,
    *,
    since: datetime,
    words: Sequence[str],
    turn_key: str | None,
    now: datetime,
) -> Redacted:
    """Inbox item `item_id` (a message, or a finding told), which came at `since` and was
    handled by turn `turn_key` (None: no turn took it), leaves what the turns kept of it (see
    the module docstring)."""
    done = Redacted()
    shown = await _redact_user_events(tx, conversation_id, item_id, since, words, now)
    done.logs = len(shown)
    done.answers = await _withdraw_answers(tx, shown, item_id, now)
    if turn_key:
        done.answers += await _withdraw_replies(tx, conversation_id, turn_key)
    done.summaries = await _withdraw_history_summaries(tx, shown)
    done.summaries += await _drop_workhub_summaries(tx, conversation_id, since, now)
    return done


async def _redact_user_events(
    tx: AsyncSession,
    conversation_id: int,
    item_id: int,
    since: datetime,
    words: Sequence[str],
    now: datetime,
) -> list[tuple[int, int]]:
    """The `user` events that showed the item, redacted: their (session id, seq)."""
    rows = (
        await tx.execute(
            select(_EVENTS.c.id, _EVENTS.c.session_id, _EVENTS.c.seq, _EVENTS.c.text,
                   _EVENTS.c.payload)
            .join(_SESSIONS, _SESSIONS.c.id == _EVENTS.c.session_id)
            .where(
                _SESSIONS.c.conversation_id == conversation_id,
                _EVENTS.c.kind == "user",
                _EVENTS.c.created_at >= since,
                sql_cast(_EVENTS.c.payload, Text).like(f"%{item_id}%"),
            )
        )
    ).all()  # fmt: skip
    shown: list[tuple[int, int]] = []
    for row in rows:
        payload = dict(row.payload or {})
        if item_id not in (payload.get("inbox_items") or []):
            continue  # another number that merely contains the digits
        text = redacted(row.text, payload, item_id, words)
        payload["recalled"] = [*(payload.get("recalled") or []), item_id]
        await tx.execute(
            update(_EVENTS).where(_EVENTS.c.id == row.id).values(text=text, payload=payload)
        )
        await append_events(tx, row.session_id, [(REDACTION, text, {"redacts": row.seq})], now)
        shown.append((row.session_id, row.seq))
    return shown


async def _withdraw_answers(
    tx: AsyncSession, shown: list[tuple[int, int]], item_id: int, now: datetime
) -> int:
    """The `assistant` event each of those turns logged right after its `user` event."""
    if not shown:
        return 0
    after = or_(*(and_(_EVENTS.c.session_id == s, _EVENTS.c.seq == q + 1) for s, q in shown))
    rows = (
        await tx.execute(
            select(_EVENTS.c.id, _EVENTS.c.session_id, _EVENTS.c.seq, _EVENTS.c.text).where(
                after, _EVENTS.c.kind == "assistant"
            )
        )
    ).all()
    count = 0
    for row in rows:
        if row.text in (WITHDRAWN_ANSWER, NO_REPLY):
            continue
        await tx.execute(
            update(_EVENTS)
            .where(_EVENTS.c.id == row.id)
            .values(text=WITHDRAWN_ANSWER, payload={"recalled": [item_id]})
        )
        redaction = {"redacts": row.seq, "kind": "assistant"}
        await append_events(tx, row.session_id, [(REDACTION, WITHDRAWN_ANSWER, redaction)], now)
        count += 1
    return count


async def _withdraw_replies(tx: AsyncSession, conversation_id: int, turn_key: str) -> int:
    """The turn's replies in the outbox (their keys come from the turn's): their text goes;
    one not sent yet is not sent at all."""
    keys = [reply_keys.reply_key(turn_key, n) for n in range(reply_keys.REPLIES_PER_TURN)]
    rows = (
        await tx.execute(
            select(OutboxMessage.id, OutboxMessage.state, OutboxMessage.content).where(
                OutboxMessage.idempotency_key.in_(keys),
                OutboxMessage.conversation_id == conversation_id,
            )
        )
    ).all()
    count = 0
    for row in rows:
        content = row.content if isinstance(row.content, dict) else {}
        if content.get("withdrawn"):
            continue
        # A redrawn card's target stays: the outbox finds a card's latest drawing by it.
        kept = {k: content[k] for k in ("message_id",) if k in content}
        values: dict[str, Any] = {"content": {**kept, "text": WITHDRAWN_ANSWER, "withdrawn": True}}
        if row.state == outbox.PENDING:
            values.update(state=outbox.FAILED, last_error="withdrawn before it was sent")
        await tx.execute(update(OutboxMessage).where(OutboxMessage.id == row.id).values(**values))
        count += 1
    return count


async def _withdraw_history_summaries(tx: AsyncSession, shown: list[tuple[int, int]]) -> int:
    """The conversation history's summaries (bot/assistant/history.py) covering those turns."""
    if not shown:
        return 0
    first: dict[int, int] = {}
    for session_id, seq in shown:
        first[session_id] = min(seq, first.get(session_id, seq))
    later = or_(*(and_(_EVENTS.c.session_id == s, _EVENTS.c.seq > q) for s, q in first.items()))
    rows = (
        await tx.execute(
            select(_EVENTS.c.id, _EVENTS.c.session_id, _EVENTS.c.text, _EVENTS.c.payload).where(
                later, _EVENTS.c.kind == "summary"
            )
        )
    ).all()
    count = 0
    for row in rows:
        covered = (row.payload or {}).get("covered_seq")
        if row.text == WITHDRAWN_SUMMARY or not isinstance(covered, int):
            continue
        if covered < first[row.session_id]:
            continue
        await tx.execute(
            update(_EVENTS).where(_EVENTS.c.id == row.id).values(text=WITHDRAWN_SUMMARY)
        )
        count += 1
    return count


async def _drop_workhub_summaries(
    tx: AsyncSession, conversation_id: int, since: datetime, now: datetime
) -> int:
    """The WorkHub summaries (routing's digests) of the conversation's Sessions, generated
    since the message came: dropped, and a refresh asked for, which writes them again from
    the redacted log (bot/workhub/summaries.py); a generation under way is voided."""
    rows = (
        await tx.execute(
            select(SessionSummary.session_id, SessionSummary.completion_count)
            .join(Session, Session.id == SessionSummary.session_id)
            .where(
                Session.conversation_id == conversation_id,
                SessionSummary.text.is_not(None),
                SessionSummary.generated_at >= since,
            )
        )
    ).all()
    for row in rows:
        await tx.execute(
            update(SessionSummary)
            .where(SessionSummary.session_id == row.session_id)
            .values(
                text=None,
                covered_seq=0,
                stale=False,
                summarized_at_count=0,
                requested_at_count=max(1, int(row.completion_count or 0)),
                last_error=None,
                lease_owner=VOIDED_BY,
                lease_expires_at=now,
            )
        )
        await append_events(tx, row.session_id, [(REDACTION, "", {"digest": True})], now)
    return len(rows)
