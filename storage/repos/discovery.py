"""Discovery's rows: the heartbeat state, rounds (and skips), the notebook, findings, and the
signals the pre-check compares (each one cheap indexed read)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from storage import claims
from storage.models import (
    DiscoveryRound,
    DiscoveryState,
    Finding,
    FindingFeedback,
    InboxItem,
    IndexEntry,
    Matter,
    MessageReaction,
    NotebookNote,
    OutboxMessage,
    Session,
    SourceRecord,
)
from storage.repos._upsert import insert_for
from storage.repos.matters import WAITING

STATE_ID = 1
KEEP_SKIPS = 200  # the skip log is for `/discovery status`, not history
OPEN_PHASES = ("discovery", "judgement")


@dataclass(frozen=True)
class Defaults:
    enabled: bool
    interval_seconds: int
    quiet: tuple[int, int] | None
    budget_tokens: int
    deep_every_seconds: int


async def get_state(tx: AsyncSession) -> DiscoveryState | None:
    return await tx.get(DiscoveryState, STATE_ID)


def state_of(defaults: Defaults, now: datetime) -> DiscoveryState:
    """The state as the settings' defaults make it (not stored)."""
    quiet = defaults.quiet or (None, None)
    return DiscoveryState(
        id=STATE_ID,
        enabled=defaults.enabled,
        interval_seconds=defaults.interval_seconds,
        quiet_from=quiet[0],
        quiet_to=quiet[1],
        budget_tokens=defaults.budget_tokens,
        deep_every_seconds=defaults.deep_every_seconds,
        run_requested=False,
        watermark={},
        updated_at=now,
    )


async def ensure_state(tx: AsyncSession, defaults: Defaults, now: datetime) -> DiscoveryState:
    """The state row, made from the settings' defaults the first time it is needed."""
    row = await tx.get(DiscoveryState, STATE_ID)
    if row is None:
        row = state_of(defaults, now)
        tx.add(row)
        await tx.flush()
    return row


_CLAIM_STATE = claims.claim(DiscoveryState, [DiscoveryState.id == STATE_ID], [DiscoveryState.id])


async def claim_state(
    tx: AsyncSession, *, owner: str, lease: timedelta, now: datetime
) -> DiscoveryState | None:
    rows = await _CLAIM_STATE.take(tx, limit=1, owner=owner, lease=lease, now=now)
    return rows[0] if rows else None


async def record_skip(tx: AsyncSession, reason: str, now: datetime) -> None:
    tx.add(DiscoveryRound(phase="skipped", reason=reason, watermark={}, findings=0,
                               started_at=now, finished_at=now))  # fmt: skip
    await tx.flush()
    keep = (
        select(DiscoveryRound.id)
        .where(DiscoveryRound.phase == "skipped")
        .order_by(DiscoveryRound.id.desc())
        .limit(KEEP_SKIPS)
    )
    oldest_kept = await tx.scalar(select(func.min(keep.subquery().c.id)))
    if oldest_kept is not None:
        await tx.execute(
            delete(DiscoveryRound).where(
                DiscoveryRound.phase == "skipped", DiscoveryRound.id < oldest_kept
            )
        )


async def open_round(
    tx: AsyncSession, reason: str, watermark: dict[str, Any], now: datetime
) -> DiscoveryRound:
    row = DiscoveryRound(phase="discovery", reason=reason, watermark=watermark, findings=0,
                         started_at=now)  # fmt: skip
    tx.add(row)
    await tx.flush()
    return row


async def unfinished_round(tx: AsyncSession) -> DiscoveryRound | None:
    stmt = (
        select(DiscoveryRound)
        .where(DiscoveryRound.phase.in_(OPEN_PHASES))
        .order_by(DiscoveryRound.id.desc())
        .limit(1)
    )
    return (await tx.scalars(stmt)).first()


async def recent_rounds(
    tx: AsyncSession, phases: tuple[str, ...], limit: int
) -> list[DiscoveryRound]:
    stmt = (
        select(DiscoveryRound)
        .where(DiscoveryRound.phase.in_(phases))
        .order_by(DiscoveryRound.id.desc())
        .limit(limit)
    )
    return list((await tx.scalars(stmt)).all())


async def role_session(tx: AsyncSession, state: DiscoveryState, role: str, now: datetime) -> int:
    """The reusable Session of a pass (role `discovery` or `judgement`), made on first use;
    never a WorkHub candidate (those have no role)."""
    attr = f"{role}_session_id"
    existing = getattr(state, attr)
    if existing is not None:
        return int(existing)
    created = Session(name=f"discovery: {role}", role=role, state="active", labels=[],
                      is_archived=False, created_at=now, status_updated_at=now)  # fmt: skip
    tx.add(created)
    await tx.flush()
    setattr(state, attr, created.id)
    return created.id


# ---- the notebook ------------------------------------------------------------------------


async def append_note(
    tx: AsyncSession,
    *,
    round_id: int | None,
    author: str,
    kind: str,
    text: str,
    refs: list[str],
    due_on: date | None,
    now: datetime,
) -> NotebookNote:
    row = NotebookNote(round_id=round_id, author=author, kind=kind, text=text, refs=refs,
                       due_on=due_on, created_at=now)  # fmt: skip
    tx.add(row)
    await tx.flush()
    return row


async def notes(
    tx: AsyncSession, *, limit: int, kind: str | None = None, contains: str | None = None
) -> list[NotebookNote]:
    """The newest notes, oldest first."""
    stmt = select(NotebookNote)
    if kind:
        stmt = stmt.where(NotebookNote.kind == kind)
    if contains:
        stmt = stmt.where(NotebookNote.text.contains(contains))
    rows = (await tx.scalars(stmt.order_by(NotebookNote.id.desc()).limit(limit))).all()
    return list(reversed(rows))


# ---- findings ----------------------------------------------------------------------------


async def add_finding(tx: AsyncSession, finding: Finding) -> Finding:
    tx.add(finding)
    await tx.flush()
    return finding


QUEUED, DELIVERED, UNSENT, REPEAT, UNDELIVERED = (
    "queued",
    "delivered",
    "unsent",
    "repeat",
    "undelivered",
)
TOLD = (QUEUED, DELIVERED)  # what a new finding may repeat: told, or about to be


async def told_findings(tx: AsyncSession, limit: int) -> list[Finding]:
    """The newest findings told to the owner or queued for the Bot to tell, oldest first."""
    stmt = select(Finding).where(Finding.status.in_(TOLD)).order_by(Finding.id.desc()).limit(limit)
    return list(reversed((await tx.scalars(stmt)).all()))


@dataclass(frozen=True)
class Handling:
    """A queued finding and the Bot turn that handled its inbox item (its batch id, which is
    the turn's key), None while the item waits for the Bot."""

    finding: Finding
    turn: str | None


async def queued_findings(tx: AsyncSession) -> list[Handling]:
    queued = list((await tx.scalars(select(Finding).where(Finding.status == QUEUED))).all())
    if not queued:
        return []
    keys = [finding_item_key(f.id) for f in queued]
    handled = dict(
        (
            await tx.execute(
                select(InboxItem.dedupe_key, InboxItem.batch_id).where(
                    InboxItem.dedupe_key.in_(keys), InboxItem.delivered_at.is_not(None)
                )
            )
        ).all()
    )
    return [Handling(f, handled.get(finding_item_key(f.id))) for f in queued]


def finding_item_key(finding_id: int) -> str:
    """The dedupe key of a finding's item in the owner's Bot inbox."""
    return f"finding:{finding_id}"


@dataclass(frozen=True)
class Reply:
    key: str
    state: str
    sent_at: datetime | None
    message_ids: list[str]


async def replies(tx: AsyncSession, keys: list[str]) -> dict[str, Reply]:
    """The outbox rows of these idempotency keys (read only: the Bot writes the outbox)."""
    rows = await tx.execute(
        select(
            OutboxMessage.idempotency_key,
            OutboxMessage.state,
            OutboxMessage.sent_at,
            OutboxMessage.platform_message_ids,
        ).where(OutboxMessage.idempotency_key.in_(keys))
    )
    return {k: Reply(k, state, sent, list(ids or [])) for k, state, sent, ids in rows.all()}


async def delivered_since(tx: AsyncSession, since: datetime) -> list[Finding]:
    """Findings whose message was sent since `since` (feedback can be tied to them)."""
    stmt = (
        select(Finding)
        .where(
            Finding.status == DELIVERED,
            Finding.message_id.is_not(None),
            Finding.delivered_at >= since,
        )
        .order_by(Finding.delivered_at)
    )
    return list((await tx.scalars(stmt)).all())


async def owner_messages_after(
    tx: AsyncSession, conversation_id: int, after: datetime, limit: int
) -> list[InboxItem]:
    """The messages in a DM after a moment, oldest first (a reply to a finding among them)."""
    stmt = (
        select(InboxItem)
        .where(
            InboxItem.conversation_id == conversation_id,
            InboxItem.kind == "user_message",
            InboxItem.created_at > after,
        )
        .order_by(InboxItem.id)
        .limit(limit)
    )
    return list((await tx.scalars(stmt)).all())


async def reactions_on(
    tx: AsyncSession, platform: str, message_ids: list[str]
) -> list[MessageReaction]:
    if not message_ids:
        return []
    stmt = (
        select(MessageReaction)
        .where(MessageReaction.platform == platform, MessageReaction.message_id.in_(message_ids))
        .order_by(MessageReaction.id)
    )
    return list((await tx.scalars(stmt)).all())


async def add_feedback(
    tx: AsyncSession, *, finding_id: int, kind: str, source: str, text: str, now: datetime
) -> bool:
    """Once per (finding, source): False when this source was recorded before."""
    stmt = (
        insert_for(tx, FindingFeedback.__table__)
        .values(finding_id=finding_id, kind=kind, source=source, text=text, created_at=now)
        .on_conflict_do_nothing(index_elements=["finding_id", "source"])
        .returning(FindingFeedback.__table__.c.id)
    )
    return (await tx.execute(stmt)).first() is not None


async def feedback_of(tx: AsyncSession, finding_ids: list[int]) -> dict[int, list[FindingFeedback]]:
    if not finding_ids:
        return {}
    stmt = (
        select(FindingFeedback)
        .where(FindingFeedback.finding_id.in_(finding_ids))
        .order_by(FindingFeedback.id)
    )
    found: dict[int, list[FindingFeedback]] = {}
    for row in (await tx.scalars(stmt)).all():
        found.setdefault(row.finding_id, []).append(row)
    return found


@dataclass(frozen=True)
class Counts:
    notes: int
    findings: dict[str, int]
    feedback: int


async def counts(tx: AsyncSession) -> Counts:
    notes_n = await tx.scalar(select(func.count(NotebookNote.id)))
    by_status = (
        await tx.execute(select(Finding.status, func.count(Finding.id)).group_by(Finding.status))
    ).all()
    feedback = await tx.scalar(select(func.count(func.distinct(FindingFeedback.finding_id))))
    return Counts(int(notes_n or 0), {str(s): int(n) for s, n in by_status}, int(feedback or 0))


# ---- what the pre-check compares ---------------------------------------------------------


async def signals(
    tx: AsyncSession, now: datetime, today: date, lookahead: timedelta
) -> dict[str, Any]:
    """What exists now that a round could look at: the newest record, index entry change,
    note and feedback; the Matters due soon (waiting, their next wake within `lookahead`);
    the noted deadlines that are near."""
    newest_record = await tx.scalar(select(func.max(SourceRecord.id)))
    newest_entry = await tx.scalar(select(func.max(IndexEntry.updated_at)))
    newest_note = await tx.scalar(select(func.max(NotebookNote.id)))
    # The newest feedback's id, not a count: new feedback is what wakes a round, and
    # max(id) reads one end of the primary key where count(*) reads every row.
    feedback = await tx.scalar(select(func.max(FindingFeedback.id)))
    due_matters = await tx.scalars(
        select(Matter.id).where(
            Matter.status == WAITING,
            Matter.next_wake_at.is_not(None),
            Matter.next_wake_at <= now + lookahead,
        )
    )
    near = await tx.scalars(
        select(NotebookNote.id).where(
            NotebookNote.due_on.is_not(None),
            NotebookNote.due_on >= today,
            NotebookNote.due_on <= today + lookahead,
        )
    )
    return {
        "records": int(newest_record or 0),
        "entries": newest_entry.isoformat() if newest_entry else "",
        "notes": int(newest_note or 0),
        "feedback": int(feedback or 0),
        "matters": sorted(int(i) for i in due_matters),
        "deadlines": sorted(int(i) for i in near),
    }
