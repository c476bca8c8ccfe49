"""Conversations: one per platform chat."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple, cast

from sqlalchemy import Table, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import Conversation
from storage.repos._lists import in_list
from storage.repos._upsert import per_dialect


@dataclass(frozen=True)
class NewConversation:
    platform: str
    chat_id: str
    chat_type: str
    peer_open_id: str | None = None
    name: str | None = None


async def get_or_create(
    tx: AsyncSession,
    *,
    platform: str,
    chat_id: str,
    chat_type: str,
    peer_open_id: str | None = None,
    name: str | None = None,
) -> Conversation:
    wanted = NewConversation(platform, chat_id, chat_type, peer_open_id, name)
    return (await get_or_create_many(tx, [wanted]))[(platform, chat_id)]


async def get_or_create_many(
    tx: AsyncSession, wanted: Sequence[NewConversation]
) -> dict[tuple[str, str], Conversation]:
    """Each chat's conversation by (platform, chat_id), created where there is none: one
    insert however many, which returns the ones it made (a batch of first messages from new
    people is that one statement), and one read for the chats that had one already.
    Race-free across replicas: the unique (platform, chat_id) decides who creates it, and a
    chat asked for twice gets what the first asked for."""
    if not wanted:
        return {}
    firsts = list({(w.platform, w.chat_id): w for w in reversed(wanted)}.values())
    made = await tx.scalars(_INSERT(tx), [{**asdict(w), "listen_all": False} for w in firsts])
    found = {(row.platform, row.chat_id): row for row in made}
    known = [(w.platform, w.chat_id) for w in firsts if (w.platform, w.chat_id) not in found]
    if known:
        rows = await tx.scalars(
            select(Conversation).where(
                tuple_(Conversation.platform, Conversation.chat_id).in_(known)
            )
        )
        found.update({(row.platform, row.chat_id): row for row in rows})
    assert len(found) == len(firsts), "every conversation asked for exists after the insert"
    return found


def _insert(insert: Any) -> Any:
    return (
        insert(Conversation)
        .on_conflict_do_nothing(index_elements=["platform", "chat_id"])
        .returning(Conversation)
        # A None is NULL, not a column left out: else rows are batched by the columns they
        # leave out (a DM's peer, a group's none), a statement each.
        .execution_options(render_nulls=True)
    )


_INSERT = per_dialect(_insert)


async def get(tx: AsyncSession, conversation_id: int) -> Conversation | None:
    return await tx.get(Conversation, conversation_id)


class ForTurn(NamedTuple):
    """What a Bot turn reads of its conversation."""

    id: int
    platform: str
    chat_id: str
    chat_type: str
    name: str | None
    peer_open_id: str | None
    coordination_session_id: int | None


_CONVERSATIONS = cast(Table, Conversation.__table__)
_FOR_TURNS = select(*(_CONVERSATIONS.c[f] for f in ForTurn._fields)).where(
    in_list(_CONVERSATIONS.c.id, "conversation_ids")
)


async def for_turns(tx: AsyncSession, conversation_ids: Collection[int]) -> dict[int, ForTurn]:
    """`for_turn` of each, in one statement (a group of Bot turns); a missing one left out."""
    if not conversation_ids:
        return {}
    rows = await tx.execute(_FOR_TURNS, {"conversation_ids": list(conversation_ids)})
    return {row.id: ForTurn(*row) for row in rows}


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
