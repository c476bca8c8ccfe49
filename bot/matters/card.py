"""A Matter's progress card, in the chat that asked for it: made when the Matter's first turn
starts, a line at each settle (its disposition and summary), finalized when it completes
(done), is cancelled (interrupted) or is paused by an error (failed; a resume reopens it).
Written in the transaction that changes the Matter, so the card never tells another story."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import Conversation, Matter
from storage.repos import progress_cards
from storage.repos.progress_cards import WORKING, Desired


def card_key(matter_id: int) -> str:
    return f"matter-{matter_id}"


async def card_step(
    tx: AsyncSession, matter: Matter, step: str, now: datetime, status: str = WORKING
) -> bool:
    """`step` on the Matter's card (made if need be); False when the Matter has no chat or
    nothing is due to be pushed."""
    if matter.conversation_id is None:
        return False
    conversation = await tx.get(Conversation, matter.conversation_id)
    if conversation is None:
        return False
    desired = Desired(
        key=card_key(matter.id),
        platform=conversation.platform,
        chat_id=conversation.chat_id,
        title=f"Task #{matter.id}: {matter.objective[:80]}",
        steps=[],
        status=status,
        conversation_id=conversation.id,
        matter_id=matter.id,
    )
    return await progress_cards.add_step(tx, desired, step, now)


async def has_card(tx: AsyncSession, matter_id: int) -> bool:
    return await progress_cards.by_key(tx, card_key(matter_id)) is not None
