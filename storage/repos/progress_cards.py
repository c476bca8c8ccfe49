"""Progress cards: the desired state the Bot's turns and the Matters write, and what each
platform's card worker pushed (bot/channels/progress_sender.py).

A writer changes the desired state (`show`, `finish`) and bumps `version`; a card with
something to push has `next_attempt_at` set, never sooner than PUSH_GAP after its last push,
so however fast the steps change a card is pushed about once a second with its latest state
(coalesced). A worker claims due cards, pushes, and `settle`s the version it pushed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import String, bindparam, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from storage.claims import NOW, claim, probe
from storage.models import InboxItem, Matter, ProgressCard

# Published when a card's desired state changes: the card workers wake on it.
PROGRESS_TOPIC = "progress"
WORKING, DONE, FAILED, INTERRUPTED = "working", "done", "failed", "interrupted"
FINAL = frozenset({DONE, FAILED, INTERRUPTED})
# Feishu takes at most 10 updates a second per card; one a second is well under it, and
# a person reading steps does not need more.
PUSH_GAP = timedelta(seconds=1)
# A turn's card no one has touched this long is left over from a turn that is gone.
STALE_TURN = timedelta(minutes=15)
MATTER_OVER = ("completed", "cancelled")
MAX_STEPS = 20  # lines a card keeps (the latest): a card must stay well under Feishu's 30 KB
MAX_STEP_CHARS = 300


@dataclass(frozen=True)
class Desired:
    """What a card is to show, and where."""

    key: str
    platform: str
    chat_id: str
    title: str
    steps: list[str]
    status: str = WORKING
    conversation_id: int | None = None
    reply_to: str | None = None
    inbox_item_id: int | None = None
    matter_id: int | None = None


def _due_at(card: ProgressCard, now: datetime) -> datetime | None:
    if card.gave_up_at is not None:
        return None  # given up: never pushed again
    if card.next_attempt_at is not None:
        return card.next_attempt_at
    if card.pushed_at is None:
        return now
    return max(now, card.pushed_at + PUSH_GAP)


async def show(tx: AsyncSession, desired: Desired, now: datetime) -> bool:
    """Make the card `desired.key` show `desired` (made on first use); True when there is
    something new to push."""
    card = await _locked(tx, desired.key)
    if card is None:
        card = ProgressCard(
            key=desired.key,
            platform=desired.platform,
            chat_id=desired.chat_id,
            conversation_id=desired.conversation_id,
            reply_to=desired.reply_to,
            inbox_item_id=desired.inbox_item_id,
            matter_id=desired.matter_id,
            title=desired.title[:256],
            steps=list(desired.steps),
            status=desired.status,
            version=1,
            sequence=0,
            pushed_version=0,
            streaming_closed=False,
            pushes=0,
            failures=0,
            created_at=now,
            updated_at=now,
            next_attempt_at=now,
        )
        tx.add(card)
        await tx.flush()
        return True
    if (card.title, list(card.steps), card.status) == (
        desired.title[:256],
        list(desired.steps),
        desired.status,
    ):
        return False
    card.title, card.steps, card.status = desired.title[:256], list(desired.steps), desired.status
    return _changed(card, now)


async def add_step(tx: AsyncSession, desired: Desired, step: str, now: datetime) -> bool:
    """`step` as the card's latest line (once, if it is the latest already), the card made
    if it is not there yet, with `desired`'s title and status; True when due to be pushed."""
    step = step if len(step) <= MAX_STEP_CHARS else step[: MAX_STEP_CHARS - 1] + "…"
    card = await _locked(tx, desired.key)
    steps = list(card.steps) if card is not None else []
    if not steps or steps[-1] != step:
        steps.append(step)
    return await show(tx, replace(desired, steps=steps[-MAX_STEPS:]), now)


async def finish(
    tx: AsyncSession, key: str, status: str, now: datetime, step: str | None = None
) -> bool:
    """End a working card as `status`, `step` added as its last line; False if there is no
    such card or it had ended already."""
    card = await _locked(tx, key)
    if card is None or card.status in FINAL:
        return False
    card.status = status
    if step and (not card.steps or card.steps[-1] != step):
        card.steps = [*card.steps, step]
    return _changed(card, now)


async def finish_turns(tx: AsyncSession, keys: list[str], now: datetime) -> bool:
    """The cards of turns that ended (their batches handled in `tx`), done: one statement
    for a group's turns, most of which have no card. True when one is due to be pushed."""
    if not keys:
        return False
    stmt = (
        select(ProgressCard)
        .where(ProgressCard.key.in_(keys), ProgressCard.status != DONE)
        .with_for_update()
    )
    due = False
    for card in (await tx.scalars(stmt)).all():
        card.status = DONE
        if not card.steps or card.steps[-1] != DONE:
            card.steps = [*card.steps, DONE]
        due = _changed(card, now) or due
    return due


def _changed(card: ProgressCard, now: datetime) -> bool:
    card.version += 1
    card.updated_at = now
    card.next_attempt_at = _due_at(card, now)
    return card.next_attempt_at is not None


async def _locked(tx: AsyncSession, key: str) -> ProgressCard | None:
    stmt = select(ProgressCard).where(ProgressCard.key == key).with_for_update()
    return (await tx.scalars(stmt)).one_or_none()


async def sweep(tx: AsyncSession, now: datetime) -> list[str]:
    """Finalize as interrupted the working cards whose turn or Matter is gone: the turn's
    batch was handled (or parked) without ending its card, the Matter is over, or a turn's
    card was left untouched for STALE_TURN. A turn killed midway keeps its card: its batch
    is still undelivered, and the turn that runs it again reuses the card. The keys."""
    item_done = (
        select(InboxItem.id)
        .where(InboxItem.id == ProgressCard.inbox_item_id, InboxItem.delivered_at.is_not(None))
        .exists()
    )
    matter_over = (
        select(Matter.id)
        .where(Matter.id == ProgressCard.matter_id, Matter.status.in_(MATTER_OVER))
        .exists()
    )
    turn_stale = (ProgressCard.matter_id.is_(None)) & (ProgressCard.updated_at < now - STALE_TURN)
    stmt = (
        select(ProgressCard)
        .where(ProgressCard.status == WORKING, item_done | matter_over | turn_stale)
        .with_for_update(skip_locked=True)
        .limit(100)
    )
    keys: list[str] = []
    for card in (await tx.scalars(stmt)).all():
        card.status = INTERRUPTED
        card.steps = [*card.steps, "interrupted"]
        _changed(card, now)
        keys.append(card.key)
    return keys


async def of_conversation(tx: AsyncSession, conversation_id: int) -> list[ProgressCard]:
    """A conversation's cards, oldest first (for a page that draws them, as the console)."""
    stmt = (
        select(ProgressCard)
        .where(ProgressCard.conversation_id == conversation_id)
        .order_by(ProgressCard.id)
    )
    return list((await tx.scalars(stmt)).all())


async def by_key(tx: AsyncSession, key: str) -> ProgressCard | None:
    return (await tx.scalars(select(ProgressCard).where(ProgressCard.key == key))).one_or_none()


# ---- the workers' side -----------------------------------------------------------------------

_DUE = [
    ProgressCard.platform == bindparam("of_platform", type_=String()),
    ProgressCard.next_attempt_at <= NOW,
    ProgressCard.gave_up_at.is_(None),
]
_HAS_DUE = probe(ProgressCard, _DUE)
_CLAIM_DUE = claim(ProgressCard, _DUE, [ProgressCard.next_attempt_at, ProgressCard.id])


async def has_due(tx: AsyncSession, *, platform: str, now: datetime) -> bool:
    return await _HAS_DUE.finds(tx, now=now, of_platform=platform)


async def claim_due(
    tx: AsyncSession, *, platform: str, owner: str, now: datetime, limit: int, lease: timedelta
) -> list[ProgressCard]:
    return await _CLAIM_DUE.take(
        tx, limit=limit, owner=owner, lease=lease, now=now, of_platform=platform
    )


async def next_due(tx: AsyncSession, *, platform: str) -> datetime | None:
    """When the next card of `platform` is due (None: none is)."""
    stmt = select(func.min(ProgressCard.next_attempt_at)).where(
        ProgressCard.platform == platform, ProgressCard.gave_up_at.is_(None)
    )
    result: datetime | None = await tx.scalar(stmt)
    return result


async def _claimed(tx: AsyncSession, row_id: int, owner: str) -> ProgressCard | None:
    stmt = (
        select(ProgressCard)
        .where(ProgressCard.id == row_id, ProgressCard.lease_owner == owner)
        .with_for_update()
    )
    return (await tx.scalars(stmt)).one_or_none()


async def record(tx: AsyncSession, row_id: int, owner: str, **pushed: Any) -> bool:
    """Store what a push made so far (card id, message id, sequence...) while it runs, so a
    crash midway never makes a second card; False if the claim was lost."""
    card = await _claimed(tx, row_id, owner)
    if card is None:
        return False
    for name, value in pushed.items():
        setattr(card, name, value)
    return True


async def settle(
    tx: AsyncSession, row_id: int, owner: str, *, version: int, now: datetime, **pushed: Any
) -> bool:
    """`version` is what the platform shows now: due again (after PUSH_GAP) only if the
    desired state moved on meanwhile. False if the claim was lost."""
    card = await _claimed(tx, row_id, owner)
    if card is None:
        return False
    for name, value in pushed.items():
        setattr(card, name, value)
    card.pushed_version = max(card.pushed_version, version)
    card.pushed_at = now
    card.pushes += 1
    card.failures, card.last_error = 0, None
    card.next_attempt_at = now + PUSH_GAP if card.version > card.pushed_version else None
    card.lease_owner = card.lease_expires_at = None
    return True


async def retry_later(
    tx: AsyncSession, row_id: int, owner: str, *, at: datetime, error: str, **pushed: Any
) -> bool:
    card = await _claimed(tx, row_id, owner)
    if card is None:
        return False
    for name, value in pushed.items():
        setattr(card, name, value)
    card.failures += 1
    card.last_error = error
    card.next_attempt_at = at
    card.lease_owner = card.lease_expires_at = None
    return True


async def give_up(tx: AsyncSession, row_id: int, owner: str, *, now: datetime, error: str) -> bool:
    """Never push this card again (it degrades to nothing; the answer is unaffected)."""
    card = await _claimed(tx, row_id, owner)
    if card is None:
        return False
    card.failures += 1
    card.last_error = error
    card.gave_up_at = now
    card.next_attempt_at = None
    card.lease_owner = card.lease_expires_at = None
    return True
