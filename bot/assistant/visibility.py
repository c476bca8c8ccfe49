"""Who sees what: one rule, decided from the conversation and the requester, never from the
contents of a turn.

- The owner's DM sees everything.
- Another person's DM sees what belongs to that DM: the tasks and Matters started there, its
  own messages, and the sources the owner shared with it.
- A group sees what belongs to that group, likewise; the owner's DMs and mail never surface
  there unless the owner shared that source with the group.

Every read path asks `visibility_of` and filters with what it returns: WorkHub candidates and
the task tools, `/matters`, `/search`, `/sync status`, `/status`, the task agent's search and
search evidence. A turn with no user message acts as the conversation's own participant (the
DM's other party), never as the owner unless it is the owner's DM.

Usage figures (model tokens, Feishu API calls, discovery's tokens against its budget) are the
owner's costs: `Visibility.sees_usage` says where they are shown (`/status`, `/discovery
status`); outside chats only the status page shows them, behind the admin token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from bot.channels.console.identity import CONSOLE_PLATFORM, console_identity
from bot.config import Settings
from bot.memory.session_index import ChatLike, conversation_scope
from storage.repos import source_shares
from storage.search import SearchFilters


class ConversationLike(ChatLike, Protocol):
    @property
    def id(self) -> int: ...
    @property
    def platform(self) -> str: ...


@dataclass(frozen=True)
class Visibility:
    """What one conversation may see. `scopes` are search scopes (`dm:<open_id>`,
    `group:<chat_id>`, `mail:<mailbox>`): the conversation's own and the shared sources'."""

    everything: bool
    conversation_id: int | None
    scopes: frozenset[str] = frozenset()

    @property
    def sees_nothing(self) -> bool:
        return not self.everything and self.conversation_id is None

    @property
    def only_conversation(self) -> int | None:
        """The conversation rows must belong to, for a query's filter; None when everything
        may be seen (check `sees_nothing` first: None does not mean nothing)."""
        return None if self.everything else self.conversation_id

    def sees_conversation(self, conversation_id: int | None) -> bool:
        """Tasks, Matters and queues belong to the conversation they were started in."""
        if self.everything:
            return True
        return conversation_id is not None and conversation_id == self.conversation_id

    def sees_scope(self, scope: str | None) -> bool:
        """Sources and search documents carry a scope; account rows (scope None) are the
        owner's operations."""
        return self.everything or (scope is not None and scope in self.scopes)

    @property
    def sees_usage(self) -> bool:
        """Usage figures: only where everything may be seen (the owner's DM), never an
        admin's group or DM."""
        return self.everything

    def search_filters(self) -> SearchFilters | None:
        """None means no restriction; an empty scope list matches nothing."""
        return None if self.everything else SearchFilters(scopes=sorted(self.scopes))


USAGE_ELSEWHERE = "usage is shown in the owner's DM"  # said where `sees_usage` is False
NOTHING = Visibility(everything=False, conversation_id=None)


def owner_identity(settings: Settings, platform: str) -> str | None:
    """The owner's id on a platform (the console speaks as the owner by default)."""
    return console_identity(settings) if platform == CONSOLE_PLATFORM else settings.owner


def participant(conversation: ConversationLike) -> str | None:
    """Who a turn with no user message acts as: the DM's other party; nobody in a group."""
    return conversation.peer_open_id if conversation.chat_type == "p2p" else None


def is_owner_dm(settings: Settings, conversation: ConversationLike) -> bool:
    owner = owner_identity(settings, conversation.platform)
    return conversation.chat_type == "p2p" and bool(owner) and conversation.peer_open_id == owner


async def visibility_of(
    tx: AsyncSession,
    settings: Settings,
    conversation: ConversationLike | None,
    requester: str | None = None,
) -> Visibility:
    """THE rule. `requester` is who is asking (None: the conversation's own participant)."""
    if conversation is None:
        return NOTHING
    acting = requester if requester is not None else participant(conversation)
    if is_owner_dm(settings, conversation) and acting == conversation.peer_open_id:
        return Visibility(everything=True, conversation_id=conversation.id)
    shared = await source_shares.shared_with(tx, conversation.id)
    own = conversation_scope(conversation)
    scopes = {own} if own else set()
    scopes |= {s.scope for s in shared if s.scope}
    return Visibility(everything=False, conversation_id=conversation.id, scopes=frozenset(scopes))
