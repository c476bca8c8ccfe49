"""What an action tool works with, whoever calls it: the Bot in its turn or a task agent in
a Matter's turn. One definition per tool takes an `ActionContext`; each agent's own tool
context is adapted to it when the tool is called (`ActionTools`), so the asker, the
conversation and the request key are decided here, once per agent, never by the model.

- The Bot: the turn's asker (bot/assistant/asking.py) in the turn's conversation; the request
  key is the turn's (`TurnContext.next_action_id`: the same batch run again, the same key).
- A task agent: the person who asked for the task (the Matter's requester) with what they may
  see there, in the conversation the Matter was started in; the request key is the Matter's
  step (its revision) and the call's ordinal at it, so a turn paused mid-way and resumed at
  the same revision proposes under the same keys and gets the first rows' states back.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, Generic, Protocol, TypeVar

from bot.actions.registry import Where
from bot.agent.tools import ToolError, ToolFunc, ToolRegistry, tool_from_function
from bot.assistant.access import role_of
from bot.assistant.asking import Asker, asker_of
from bot.assistant.turn_context import ConversationView, TurnContext
from bot.matters.tools import MatterTurnContext
from bot.services import Services
from storage.models import Conversation, Matter

C = TypeVar("C")
NO_ONE = "this task acts for no one (it has no conversation or requester); tell the assistant"


class ActionContext(Protocol):
    @property
    def services(self) -> Services: ...
    @property
    def conversation(self) -> Where: ...
    async def asker(self) -> Asker: ...
    def request_key(self, kind: str) -> str: ...


class ActionTools(Generic[C]):
    """An agent's tool registry as action tools see it: each tool is registered under its
    own name and schema, and called with `adapt` of the agent's context."""

    def __init__(
        self, registry: ToolRegistry[C], adapt: Callable[[C], Awaitable[ActionContext]]
    ) -> None:
        self.registry, self.adapt = registry, adapt

    def tool(self, func: ToolFunc) -> None:
        adapt = self.adapt

        async def call(ctx: C, **arguments: Any) -> Any:
            return await func(await adapt(ctx), **arguments)

        self.registry.add(replace(tool_from_function(func), func=call))


@dataclass
class BotActions:
    turn: TurnContext
    _asker: Asker | None = None

    @property
    def services(self) -> Services:
        return self.turn.services

    @property
    def conversation(self) -> Where:
        return self.turn.conversation

    async def asker(self) -> Asker:
        if self._asker is None:
            self._asker = await asker_of(self.turn)
        return self._asker

    def request_key(self, kind: str) -> str:
        return self.turn.next_action_id(kind)


async def for_turn(ctx: TurnContext) -> ActionContext:
    return BotActions(ctx)


@dataclass(frozen=True)
class TaskActions:
    task: MatterTurnContext
    conversation: ConversationView
    asking: Asker
    revision: int  # the Matter's, when the tool was called

    @property
    def services(self) -> Services:
        return self.task.services

    async def asker(self) -> Asker:
        return self.asking

    def request_key(self, kind: str) -> str:
        return self.task.step_key(self.revision, kind)


async def for_matter(ctx: MatterTurnContext) -> ActionContext:
    """The Matter's requester in its conversation; a Matter without either may not act."""
    services = ctx.services
    async with services.db.read() as tx:
        matter = await tx.get(Matter, ctx.matter_id, populate_existing=True)
        assert matter is not None
        conv = (
            await tx.get(Conversation, matter.conversation_id) if matter.conversation_id else None
        )
        if conv is None or not matter.requested_by:
            raise ToolError(NO_ONE)
        role = await role_of(tx, services.settings, conv.platform, matter.requested_by)
        view = ConversationView(
            conv.id, conv.platform, conv.chat_id, conv.chat_type, conv.name, conv.peer_open_id
        )
    # ctx.visibility: the turn's, decided for this same requester in this same conversation
    asker = Asker(matter.requested_by, role, ctx.visibility)
    return TaskActions(ctx, view, asker, matter.revision)
