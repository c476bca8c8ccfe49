"""Conversations: one per platform chat."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import Conversation
from storage.repos._upsert import insert_for


async def get_or_create(
    tx: AsyncSession,
    *,
    platform: str,
    chat_id: str,
    chat_type: str,
    peer_open_id: str | None = None,
    name: str | None = None,
) -> Conversation:
    """Race-free across replicas: the unique (platform, chat_id) decides who creates it."""
    stmt = (
        insert_for(tx, Conversation)
        .values(
            platform=platform,
            chat_id=chat_id,
            chat_type=chat_type,
            peer_open_id=peer_open_id,
            name=name,
            listen_all=False,
        )
        .on_conflict_do_nothing(index_elements=["platform", "chat_id"])
    )
    await tx.execute(stmt)
    conversation = await tx.scalar(
        select(Conversation).where(
            Conversation.platform == platform, Conversation.chat_id == chat_id
        )
    )
    assert conversation is not None
    return conversation


async def get(tx: AsyncSession, conversation_id: int) -> Conversation | None:
    return await tx.get(Conversation, conversation_id)


async def find_dm(tx: AsyncSession, platform: str, open_id: str) -> Conversation | None:
    return await tx.scalar(
        select(Conversation)
        .where(
            Conversation.platform == platform,
            Conversation.chat_type == "p2p",
            Conversation.peer_open_id == open_id,
        )
        .order_by(Conversation.id)
        .limit(1)
    )


async def by_chat(tx: AsyncSession, platform: str, chat_id: str) -> Conversation | None:
    return await tx.scalar(
        select(Conversation).where(
            Conversation.platform == platform, Conversation.chat_id == chat_id
        )
    )
