"""After a finding is queued for the Bot: when it counts as delivered, and what counts as the
owner's feedback on it.

Delivered means told: the Bot handled the finding's inbox item in a turn, and the first of
that turn's replies that reached the chat was sent (its outbox row is `sent`). The finding
then records when (`delivered_at`, the row's `sent_at`) and that message's platform id
(`message_id`). A turn that sent nothing, or whose replies all failed or may not have
arrived, leaves the finding `unsent`. Read from the outbox (the turn's reply keys are
derived from its key, `storage.repos.reply_keys.reply_key`), so neither the Bot nor the
senders do anything for discovery: `settle_deliveries` runs before anything uses delivery
(each beat, `/discovery status`, the status page).

Feedback is tied to the finding's message: a reply to it or a quote of it (the owner's DM
message whose parent or root is that message), a reaction on it. Anything else the owner
says is not feedback on a finding, and silence records nothing. `record_feedback` is the one
way feedback is written, so a card's button can plug in later."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from storage.db import Database
from storage.models import Finding
from storage.repos import conversations
from storage.repos import discovery as repo
from storage.repos.reply_keys import REPLIES_PER_TURN, reply_key

FEEDBACK_WINDOW = timedelta(days=7)  # replies and reactions to a finding this long after it
FEEDBACK_CHARS = 500
MESSAGES_SCANNED = 2000  # the owner's DM messages read for replies to recent findings
REPLY, REACTION, BUTTON = "reply", "reaction", "button"
UNFINISHED = ("pending",)  # an outbox row in this state may still be sent


async def settle_deliveries(db: Database) -> int:
    """Findings whose Bot turn is over become `delivered` or `unsent`; how many changed."""
    keys: dict[int, list[str]] = {}  # finding -> its turn's reply keys, in the order written
    async with db.read() as tx:
        for handling in await repo.queued_findings(tx):
            if handling.turn is not None:
                keys[handling.finding.id] = [
                    reply_key(handling.turn, n) for n in range(REPLIES_PER_TURN)
                ]
        if not keys:
            return 0
        rows = await repo.replies(tx, [key for turn in keys.values() for key in turn])
    settled = {}
    for finding_id, turn in keys.items():
        outcome = _settled([rows[key] for key in turn if key in rows])
        if outcome is not None:
            settled[finding_id] = outcome
    if not settled:
        return 0
    async with db.write() as tx:
        for finding_id, (status, reply) in settled.items():
            row = await tx.get(Finding, finding_id)
            if row is None or row.status != repo.QUEUED:
                continue
            row.status = status
            if reply is not None:
                row.delivered_at = reply.sent_at
                row.message_id = reply.message_ids[0] if reply.message_ids else None
    return len(settled)


def _settled(replies: Sequence[repo.Reply]) -> tuple[str, repo.Reply | None] | None:
    """Delivered by the first reply sent (in the order written), or unsent when none was or
    can be; None while one may still be sent."""
    for reply in replies:
        if reply.state == "sent":
            return repo.DELIVERED, reply
    if any(reply.state in UNFINISHED for reply in replies):
        return None
    return repo.UNSENT, None


async def record_feedback(
    tx: AsyncSession, finding_id: int, kind: str, source: str, text: str, now: datetime
) -> bool:
    """The owner's feedback on a finding (`kind`: reply, reaction, button), once per
    `source` (what it came from); False when that source was recorded before."""
    return await repo.add_feedback(
        tx, finding_id=finding_id, kind=kind, source=source, text=text[:FEEDBACK_CHARS], now=now
    )


async def collect_feedback(
    db: Database, owner: str | None, platforms: Sequence[str], now: datetime
) -> int:
    """Replies to and reactions on recently delivered findings' messages, by the owner in
    their DM; how many were new."""
    if not owner:
        return 0
    found: list[tuple[int, str, str, str]] = []  # finding, kind, source, text
    async with db.read() as tx:
        told = await repo.delivered_since(tx, now - FEEDBACK_WINDOW)
        by_message = {f.message_id: f for f in told if f.message_id}
        if not by_message:
            return 0
        since = min(f.delivered_at for f in told if f.delivered_at)
        known = await repo.feedback_of(tx, [f.id for f in told])
        for platform in platforms:
            dm = await conversations.find_dm(tx, platform, owner)
            if dm is None:
                continue
            for item in await repo.owner_messages_after(tx, dm.id, since, MESSAGES_SCANNED):
                p = item.payload
                replied = [by_message[m] for m in _replied_to(p) if m in by_message]
                if replied and p.get("sender_id") == owner:
                    text = str(p.get("text") or "")
                    found.append((replied[0].id, REPLY, f"reply:{p.get('message_id')}", text))
            for reaction in await repo.reactions_on(tx, platform, list(by_message)):
                if reaction.operator_id == owner:
                    about = by_message[reaction.message_id]
                    source = f"reaction:{reaction.event_id}"
                    found.append((about.id, REACTION, source, reaction.emoji))
    recorded = {(fid, fb.source) for fid, fbs in known.items() for fb in fbs}
    found = [f for f in found if (f[0], f[2]) not in recorded]
    if not found:
        return 0
    added = 0
    async with db.write() as tx:
        for finding_id, kind, source, text in found:
            added += await record_feedback(tx, finding_id, kind, source, text, now)
    return added


def _replied_to(payload: dict[str, object]) -> list[str]:
    """The messages a message replies to or quotes: its parent, then its thread's root."""
    return [str(m) for m in (payload.get("parent_id"), payload.get("root_id")) if m]
