"""One Bot turn over a conversation's undelivered inbox items (InboxCheck → model → tools).

Slash commands and refusals are answered first, without a model. The rest goes to the agent
loop. The batch is marked delivered, and the turn logged, in one transaction at the end:
a crash before that leaves the batch undelivered, so it is handled again after restart.
The turn's exclusive hold on its conversation (`TurnHold`, the worker's lease) is taken in
the turn's first transaction and given back in its last: one write each, not three more. The
first also reads the history the model is shown, rather than a read transaction of its own.
Each reply and the last transaction check the hold: a turn that lost it (another took the
conversation over) stops there, and the batch is the other turn's. The first and the last
write are each one kind of a grouped write (`_start_each`, `_end_each`): the turns starting or
ending in one group are written together, a statement each for all of them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from bot import progress
from bot.agent.loop import AgentLoop, Stop
from bot.agent.tools import ToolRegistry
from bot.assistant import history, holds, receipt
from bot.assistant.access import NOT_PERMITTED_DM, log_refusal
from bot.assistant.click_actions import answer_click, before_the_model
from bot.assistant.commands import CommandContext, CommandRegistry
from bot.assistant.enrich import RESERVED_TOKENS, enrich, may_enrich
from bot.assistant.failures import TurnFailed
from bot.assistant.holds import TurnHold, TurnTakenOver
from bot.assistant.progress import TurnProgress
from bot.assistant.prompt import system_prompt
from bot.assistant.turn_context import (
    BatchItem,
    ConversationView,
    TurnContext,
    answered_without_model,
    assign_roles,
    enqueue_reply,
)
from bot.assistant.visibility import visibility_of
from bot.llm.tokens import estimate_tokens
from bot.llm.tool_support import NO_TOOLS_REPLY, answered_without_tool, refused_tools
from bot.llm.types import Message, ModelError, ModelRefused, ModelToolsUnsupported
from bot.memory.session_index import TOPIC as SESSION_INDEX_TOPIC
from bot.services import Services
from storage.db import Together
from storage.models import Session
from storage.repos import conversations, inbox, outbox, progress_cards, sessions
from storage.types import utcnow

log = logging.getLogger(__name__)

NO_MODEL_REPLY = (
    "No model is configured, so I can only run slash commands (try /help). To chat, set "
    "MAKA_MODEL_BASE_URL, MAKA_MODEL_API_KEY and MAKA_MODEL_NAME and restart."
)
# The system prompt's lines around a summary (bot/assistant/prompt.py), with a margin for the
# rounding of each message's estimate.
SUMMARY_HEADING_TOKENS = 24
MODEL_FAILED_REPLY = "Sorry, I could not answer right now. Your message is saved; please try again."
REFUSED_REPLY = (
    "Sorry, I can't answer that: the model provider's content filter declined this request."
)


class BotTurn:
    def __init__(
        self, services: Services, commands: CommandRegistry, tools: ToolRegistry[TurnContext]
    ) -> None:
        self.services = services
        self.commands = commands
        self.tools = tools
        self._tools_tokens: tuple[int, int] = (-1, 0)  # (tools counted, their schemas' tokens)

    async def run(self, conversation_id: int, hold: TurnHold) -> None:
        """One turn. Returning, it has given `hold` back (or never had it); raising, the
        caller gives it back."""
        services = self.services
        # With the other turns' writes of the moment, as the turn's end and its replies are,
        # and with the other turns starting there.
        start = await services.db.grouped(
            Together(_start_each, _Starting(self, conversation_id, hold))
        )
        if start is None:
            return
        ctx, direct, for_model = start.ctx, start.direct, start.for_model
        if ctx.received:  # the receipt reactions, out within a moment
            services.notifier.wake_local(outbox.OUTBOX_TOPIC)
        try:
            for item in direct:
                await self._answer_directly(ctx, item)
            if for_model:
                await before_the_model(ctx, for_model)
                await enrich(services, ctx.conversation, for_model)
                await self._think(ctx, for_model, start.context)
            logged = await self._commit(ctx, start.coordination, {item.id for item in direct})
        except TurnTakenOver as exc:
            log.warning("bot turn %s stopped: %s", ctx.turn_key, exc)
            return
        except Exception as exc:  # the worker counts it against this batch
            if ctx.card_shown:
                await progress.finish(
                    services.db, services.notifier, ctx.turn_key, progress_cards.FAILED, "failed"
                )
            raise TurnFailed([item.id for item in ctx.batch]) from exc
        if ctx.received:  # their removal, after the replies
            services.notifier.wake_local(outbox.OUTBOX_TOPIC)
        if logged:
            services.notifier.wake_local(SESSION_INDEX_TOPIC)  # the search follower
        if ctx.card_shown:  # a card its end marked done (a re-run's is found by the next poll)
            services.notifier.wake_local(progress_cards.PROGRESS_TOPIC)

    def _begin(
        self, conv: conversations.ForTurn, rows: list[inbox.Pending], hold: TurnHold
    ) -> _Start:
        """What the turn works with, from what its start read: the batch, split into what is
        answered without the model and what the model sees (its history still to be read)."""
        settings = self.services.settings
        batch = [BatchItem.of(row) for row in rows]
        assign_roles(settings, conv.platform, batch)
        view = ConversationView(
            conv.id, conv.platform, conv.chat_id, conv.chat_type, conv.name, conv.peer_open_id
        )
        ctx = TurnContext(self.services, view, batch, f"c{conv.id}-i{batch[0].id}", hold)
        direct: list[BatchItem] = []
        for_model: list[BatchItem] = []
        for item in batch:  # one rule decides which, at the start and mid-turn alike
            without = answered_without_model(settings, conv.chat_type, item)
            (direct if without else for_model).append(item)
        coordination = conv.coordination_session_id or 0  # 0: made by the start, next
        ctx.received = receipt.received(settings, conv.platform, for_model)
        return _Start(ctx, direct, for_model, None, coordination)

    def _wants_history(self, start: _Start) -> bool:
        return bool(start.for_model) and self.services.model is not None

    async def _answer_directly(self, ctx: TurnContext, item: BatchItem) -> None:
        """A slash command, a button's click, or a refusal (`answered_without_model`),
        answered without a model."""
        if item.is_click and "answer" not in item.action:  # a command, or a verdict
            await answer_click(self.commands, ctx, item)
            return
        conv, role, text = ctx.conversation, item.role, item.text
        assert role is not None
        sender = str(item.payload.get("sender_id"))
        if not item.is_click and self.commands.is_command(text):
            async with self.services.db.read() as tx:
                visibility = await visibility_of(tx, self.services.settings, conv, sender)
            reply = await self.commands.dispatch(
                CommandContext(
                    self.services,
                    sender,
                    role,
                    conv.platform,
                    conv.chat_id,
                    conv.chat_type,
                    conv.id,
                    visibility,
                    list(item.payload.get("mentions") or []),
                ),
                text,
            )
        else:
            log_refusal(sender, text, f"{conv.platform}:{conv.chat_id}")
            reply = NOT_PERMITTED_DM
        await enqueue_reply(self.services, conv, f"cmd-{item.id}", reply, item, ctx.hold)

    async def _think(
        self, ctx: TurnContext, items: list[BatchItem], context: history.Context | None
    ) -> None:
        model = self.services.model
        if model is None or context is None:  # notices relayed as they are; the how-to once
            for item in items:
                if not item.is_message:
                    await ctx.send(str(item.payload.get("text") or item.kind))
            if any(item.is_message for item in items):
                await ctx.send(NO_MODEL_REPLY)
            return
        prompt = [
            Message.system(system_prompt(self.services.settings, ctx.conversation, context.summary))
        ]
        for past in context.window:
            prompt += [Message.user(past.user), Message.assistant(past.assistant)]
        prompt.append(Message.user(ctx.render_batch(items)))
        ctx.pending_summary = context.new_summary
        loop = AgentLoop(
            model,
            self.tools,
            purpose="bot_turn",
            max_steps=10,
            conversation_id=ctx.conversation.id,
        )
        watcher = TurnProgress(ctx)
        tool_support = self.services.tool_support
        try:
            result = await loop.run(
                ctx,
                prompt,
                ended=lambda c: c.ended,
                shown=TurnContext.mark_shown,
                on_tool=watcher.on_tool,
                on_writing=watcher.on_writing,
            )
        except ModelRefused as exc:  # an honest answer, not a failure to retry
            log.warning("bot turn %s: the content filter refused: %s", ctx.turn_key, exc)
            await ctx.send(REFUSED_REPLY)
            return
        except ModelToolsUnsupported as exc:
            tool_support.cannot(refused_tools(model.model, exc))
            log.error("bot turn %s: %s", ctx.turn_key, tool_support.reason)
            ctx.model_failed = True
            await ctx.send(NO_TOOLS_REPLY.format(model=model.model))
            return
        except ModelError as exc:
            log.error("bot turn %s: the model failed: %s", ctx.turn_key, exc)
            ctx.model_failed = True
            await ctx.send(MODEL_FAILED_REPLY)
            return
        if result.outcomes:
            tool_support.can()
        elif result.stop is Stop.NO_TOOL_CALLS and not ctx.sent:
            # Its plain text is never shown (the prompt says so): a model that ignores the
            # tools would leave every message unanswered, unseen.
            tool_support.cannot(answered_without_tool(model.model))
            log.error("bot turn %s: %s", ctx.turn_key, tool_support.reason)
            ctx.model_failed = True
            await ctx.send(NO_TOOLS_REPLY.format(model=model.model))

    def _history_budget(self, ctx: TurnContext, items: list[BatchItem]) -> tuple[int, int]:
        """(the past turns' budget, the summary's): what the context leaves after the rest."""
        fixed = estimate_tokens(system_prompt(self.services.settings, ctx.conversation, ""))
        fixed += self._tool_schema_tokens()
        fixed += estimate_tokens(ctx.render_batch(items))
        if may_enrich(items):  # its lines come after the history is read
            fixed += RESERVED_TOKENS
        room = self.services.settings.context_tokens - fixed
        summary_max = max(0, min(history.SUMMARY_MAX_TOKENS, room - SUMMARY_HEADING_TOKENS))
        return max(0, room - history.SUMMARY_MAX_TOKENS), summary_max

    def _tool_schema_tokens(self) -> int:
        """The tools' schemas in tokens, counted again only when tools were added (they are
        at start-up; every turn used to render and count them all, in its first write)."""
        specs = self.tools.specs()
        if self._tools_tokens[0] != len(specs):
            self._tools_tokens = (len(specs), estimate_tokens(str([t.parameters for t in specs])))
        return self._tools_tokens[1]

    async def _commit(self, ctx: TurnContext, session_id: int, direct: set[int]) -> bool:
        """Give the hold back, mark the batch delivered and log the turn, in one transaction
        (shared with the other grouped writes of the moment); what the user was told about a
        task's update also goes into that task's own log. Items the model was never shown
        stay undelivered for the next turn. True when something was logged (the search
        follower is told in the same transaction; this process's, by the caller);
        TurnTakenOver, with nothing written, once the hold was lost."""
        unshown = {item.id for item in ctx.unshown()}
        handled = [item for item in ctx.batch if item.id not in unshown]
        model_items = [item for item in handled if item.id not in direct]
        events: list[tuple[str, str, dict[str, object] | None]] = []
        if ctx.pending_summary is not None:
            text, covered = ctx.pending_summary
            events.append(("summary", text, {"covered_seq": covered}))
        if model_items:
            shown, spans = ctx.render_logged(model_items)
            meta: dict[str, object] = {
                "inbox_items": [item.id for item in model_items],
                "spans": spans,
            }
            if ctx.thread is not None:  # the history of this thread's turns (history.py)
                meta["thread"] = ctx.thread
            events.append(("user", shown, meta))
            events.append(("assistant", "\n\n".join(ctx.sent) or "(no reply sent)", None))

        ending = _Ending(
            self.services,
            ctx.hold,
            [item.id for item in handled],
            ctx.turn_key,
            session_id,
            events,
            _tasks_updated(model_items) if ctx.sent else [],
            "\n\n".join(ctx.sent),
            progress_cards.FAILED if ctx.model_failed else progress_cards.DONE,
            # Not of items the model never saw: the next turn has them, and their reaction.
            receipt.unreactions(
                ctx.conversation, [item for item in ctx.received if item.id not in unshown]
            ),
        )
        # With the other turns' writes of the moment (their replies, their own ends): alone,
        # each turn's end paid a write transaction of its own. A lost hold is an answer, not an
        # error, so the rest of the group still commits.
        logged = await self.services.db.grouped(Together(_end_each, ending))
        if logged is None:
            raise TurnTakenOver(f"conversation {ctx.conversation.id} was taken over")
        return logged


@dataclass(frozen=True)
class _Starting:
    turn: BotTurn
    conversation_id: int
    hold: TurnHold


async def _start_each(tx: AsyncSession, starting: list[_Starting]) -> list[_Start | None]:
    """The starts of a group's turns, a statement each for all of them: take the
    conversations and read what the turns work with. None for a turn whose conversation
    another turn has, or where nothing waits (its hold then given back at once)."""
    taken = await holds.take(tx, [s.hold for s in starting])
    ours = [s for s, ok in zip(starting, taken, strict=True) if ok]
    ids = [s.conversation_id for s in ours]
    convs = await conversations.for_turns(tx, ids)
    waiting = await inbox.pending_for_conversations(tx, ids, now=utcnow())
    await holds.give_back(tx, [s.hold for s in ours if s.conversation_id not in waiting])
    begun = {
        s.conversation_id: s.turn._begin(
            convs[s.conversation_id], waiting[s.conversation_id], s.hold
        )
        for s in ours
        if s.conversation_id in waiting
    }
    new = [
        (b.ctx.conversation.id, f"{b.ctx.conversation.platform}:{b.ctx.conversation.chat_id}")
        for b in begun.values()
        if not b.coordination
    ]
    made = await sessions.new_coordinations(tx, new, utcnow())
    for conversation_id, session_id in made.items():
        begun[conversation_id].coordination = session_id
    # The receipt reactions, in this first write: the sender is woken once it commits.
    receipts = [receipt.reactions(b.ctx.conversation, b.ctx.received) for b in begun.values()]
    await outbox.enqueue_all(tx, [row for rows in receipts for row in rows], utcnow())
    for s in ours:  # read here, not in a read of its own
        start = begun.get(s.conversation_id)
        if start is not None and s.turn._wants_history(start):
            budget, summary_max = s.turn._history_budget(start.ctx, start.for_model)
            start.context = (
                history.EMPTY
                if s.conversation_id in made
                else await history.load_context(
                    tx, start.coordination, budget, summary_max, thread=start.ctx.thread
                )
            )
    return [
        begun.get(s.conversation_id) if ok else None for s, ok in zip(starting, taken, strict=True)
    ]


@dataclass(frozen=True)
class _Ending:
    services: Services
    hold: TurnHold
    handled: list[int]
    turn_key: str
    session_id: int
    events: list[tuple[str, str, dict[str, object] | None]]
    tasks_updated: list[int]  # told the user about in `sent`
    sent: str
    card_status: str  # how its progress card ends, if it has one
    unreactions: list[dict[str, object]]  # the receipt reactions taken down, after the replies


async def _end_each(tx: AsyncSession, endings: list[_Ending]) -> list[bool | None]:
    """The ends of a group's turns, a statement each for all of them: give the holds back,
    mark the batches delivered and log the turns. None for a turn whose hold was lost
    (nothing written for it); else whether something was logged."""
    given = await holds.give_back(tx, [e.hold for e in endings])
    ended = [e for e, ok in zip(endings, given, strict=True) if ok]
    now = utcnow()
    await inbox.mark_delivered_each(tx, [(e.handled, e.turn_key) for e in ended], now)
    # A turn run again after a crash may end a card its first run made: asked of every turn.
    await progress_cards.finish_turns(tx, [(e.turn_key, e.card_status) for e in ended], now)
    logged = [e for e in ended if e.events]
    await sessions.log_each(tx, [(e.session_id, e.events) for e in logged], now)
    await outbox.enqueue_all(tx, [row for e in ended for row in e.unreactions], now)
    for ending in logged:  # what the user was told also goes into the task's own log
        for task_id in ending.tasks_updated:
            if await tx.get(Session, task_id) is not None:
                told_user = ("assistant", ending.sent, {"told_user": True})
                await sessions.append_events(tx, task_id, [told_user], now)
    return [(bool(e.events) if ok else None) for e, ok in zip(endings, given, strict=True)]


@dataclass
class _Start:
    """What a turn's first write found: its batch, split into what is answered without the
    model and what the model sees, with the history the model is shown."""

    ctx: TurnContext
    direct: list[BatchItem]
    for_model: list[BatchItem]
    context: history.Context | None
    coordination: int


def _tasks_updated(items: list[BatchItem]) -> list[int]:
    """The task Sessions whose updates this turn answered (in order, once each)."""
    ids = [item.payload.get("session_id") for item in items if item.kind == "task_update"]
    return list(dict.fromkeys(int(i) for i in ids if isinstance(i, int)))
