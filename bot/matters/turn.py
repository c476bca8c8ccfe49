"""One task-agent turn. It must end in a settle: when the model stops without one, the loop
asks it to settle; a turn that runs out of time or steps, or that a tool halts (a reviewer
that gives no verdict), pauses the Matter with a visible error (and a report to the Bot),
never silently."""

from __future__ import annotations

import asyncio
import logging

from bot.agent.framing import DATA_RULE, quote_data
from bot.agent.loop import AgentLoop
from bot.agent.tools import ToolRegistry
from bot.assistant.visibility import Visibility, visibility_of
from bot.llm.client import ModelClient
from bot.llm.types import Message, ModelError
from bot.matters.card import card_step, has_card
from bot.matters.service import MatterService
from bot.matters.tools import MatterTurnContext
from bot.memory.session_index import TOPIC as SESSION_INDEX_TOPIC
from bot.memory.session_index import conversation_scope
from bot.services import Services
from storage.models import Conversation, Matter, Session
from storage.repos import sessions
from storage.repos.progress_cards import PROGRESS_TOPIC
from storage.types import utcnow

log = logging.getLogger(__name__)

MAX_NUDGES = 3
SETTLE_NOW = (
    "You have not settled this turn. Call settle with disposition continue, wait or "
    "complete (read the matter first if you need its revision)."
)


def system_prompt(services: Services) -> str:
    now = utcnow().astimezone(services.settings.tz)
    return "\n".join(
        [
            "You are a task agent working on one Matter for a personal assistant.",
            f"Now: {now:%Y-%m-%d %H:%M} ({services.settings.timezone}).",
            "Each turn: read the matter (matter_read) and its new events (events_read), do the "
            "work you can with your tools, checkpoint the state, and end the turn with settle.",
            "You never talk to the user; message_bot tells the assistant, which decides.",
            f"{DATA_RULE}",
        ]
    )


def _over(ctx: MatterTurnContext) -> bool:
    return ctx.settled is not None or ctx.halted is not None


class MatterTurn:
    def __init__(
        self,
        services: Services,
        matters: MatterService,
        model: ModelClient,
        tools: ToolRegistry[MatterTurnContext],
        *,
        timeout: float,
        max_steps: int = 12,
    ) -> None:
        self.services, self.matters, self.model = services, matters, model
        self.tools, self.timeout, self.max_steps = tools, timeout, max_steps

    async def run(self, matter: Matter) -> None:
        await self._show_card(matter)
        scope, visibility = await self._scope(matter)
        ctx = MatterTurnContext(
            self.services,
            self.matters,
            self.model,
            matter.id,
            matter.session_id,
            scope,
            visibility,
            turn_key=f"matter:{matter.id}:run:{matter.run_count}",
        )
        prompt = [
            Message.system(system_prompt(self.services)),
            Message.user(
                quote_data(
                    "matter",
                    f"Matter #{matter.id} (revision {matter.revision}): {matter.objective}",
                )
            ),
        ]
        loop = AgentLoop(
            self.model,
            self.tools,
            purpose="matter_turn",
            max_steps=self.max_steps,
            conversation_id=matter.conversation_id,  # its costs are the chat's it serves
        )
        try:
            async with asyncio.timeout(self.timeout):
                for _ in range(MAX_NUDGES + 1):
                    result = await loop.run(ctx, prompt, ended=_over)
                    if _over(ctx):
                        break
                    prompt = [*prompt, *result.produced, Message.user(SETTLE_NOW)]
        except TimeoutError:
            await self.matters.pause(
                matter.id, f"the turn took longer than {self.timeout:.0f}s", report=True
            )
            return
        except ModelError as exc:
            await self.matters.pause(matter.id, f"the model failed: {exc}", report=True)
            return
        if ctx.halted is not None:
            await self.matters.pause(matter.id, ctx.halted, report=True)
            return
        if ctx.settled is None:
            await self.matters.pause(matter.id, "the turn ended without settling", report=True)
            return
        await self._log(matter, ctx)

    async def _show_card(self, matter: Matter) -> None:
        """The Matter's progress card, made in its chat as its first turn starts."""
        if not self.services.settings.progress_cards:
            return
        async with self.services.db.write() as tx:
            if await has_card(tx, matter.id):
                return
            due = await card_step(tx, matter, "started", utcnow())
        if due:
            self.services.notifier.wake_local(PROGRESS_TOPIC)

    async def _scope(self, matter: Matter) -> tuple[str | None, Visibility]:
        """Where the task's log is indexed, and what it may read: what the conversation it
        was started in may see, for the person who asked (no conversation: nothing)."""
        async with self.services.db.read() as tx:
            conversation = (
                await tx.get(Conversation, matter.conversation_id)
                if matter.conversation_id
                else None
            )
            visibility = await visibility_of(
                tx, self.services.settings, conversation, matter.requested_by
            )
        return conversation_scope(conversation), visibility

    async def _log(self, matter: Matter, ctx: MatterTurnContext) -> None:
        """The turn in the Session's log (and so in search), from the settled record."""
        async with self.services.db.write() as tx:
            fresh = await tx.get(Matter, matter.id)
            header = await tx.get(Session, matter.session_id)
            if fresh is None or header is None or not fresh.work_record:
                return
            last = fresh.work_record[-1]
            await sessions.append_events(
                tx,
                matter.session_id,
                [
                    ("status", f"{last['disposition']}: {last['reason']}", None),
                    ("assistant", str(last["summary"]), None),
                ],
                utcnow(),
            )
        await self.services.notifier.notify(SESSION_INDEX_TOPIC)  # the search follower
