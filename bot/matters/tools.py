"""The task agent's tools: read the Matter and its new events, checkpoint, settle (a `wait`
or `complete` under independent review), message the Bot, and read-only search. Nothing here
speaks to the user: only the Bot does. The outward action tools are added by the runtime
(`matter_tools(installers)`, bot/actions/toolsets.py): each proposes to the owner as the
Matter's requester, keyed by `step_key`."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from bot.agent.tools import ToolError, ToolRegistry
from bot.assistant.visibility import Visibility
from bot.llm.client import ModelClient
from bot.llm.roles import ModelRole
from bot.matters.review import NoVerdict, review
from bot.matters.rules import Disposition, SettleRefused, SettleRequest, check
from bot.matters.service import MatterService
from bot.matters.waits import TargetKind, WaitRefused, describe, resolve
from bot.memory import recall
from bot.parsing import ToolCount
from bot.services import Services
from storage.models import Matter
from storage.repos import matters
from storage.types import utcnow


@dataclass
class MatterTurnContext:
    services: Services
    matters: MatterService
    model: ModelClient
    matter_id: int
    session_id: int
    scope: str | None  # where this task's own log is indexed for search
    visibility: Visibility  # what it may read: its conversation's (bot/assistant/visibility.py)
    turn_key: str
    read_item_ids: list[int] = field(default_factory=list)
    settled: str | None = None  # the outcome, once a settle took effect
    halted: str | None = None  # why the turn must stop and the Matter pause (visible error)
    reported_result: bool = False
    messages: int = 0
    steps: dict[str, int] = field(default_factory=dict)  # calls per (revision, what)

    def step_key(self, revision: int, what: str) -> str:
        """A key for the `what` this turn does at the Matter's `revision` (an action it
        proposes): stable when a turn paused mid-way is resumed, which starts again at the same
        revision (a new run, so not the turn key); a settle or checkpoint moves the revision."""
        counted = f"{revision}:{what}"
        self.steps[counted] = self.steps.get(counted, 0) + 1
        return f"matter:{self.matter_id}:rev:{revision}:{what}:{self.steps[counted]}"

    async def load(self) -> Matter:
        async with self.services.db.read() as tx:
            matter = await tx.get(Matter, self.matter_id)
        assert matter is not None
        return matter


async def matter_read(ctx: MatterTurnContext) -> str:
    """The Matter as it stands: objective, amendments, state, status, revision, wakes, what
    it waits for, the recent work record, and how many events are unread."""
    m = await ctx.load()
    async with ctx.services.db.read() as tx:
        unread = [
            i
            for i in await matters.unread_items(tx, ctx.session_id)
            if i.id not in ctx.read_item_ids
        ]
    tz = ctx.services.settings.tz
    return json.dumps(
        {
            "objective": m.objective,
            "amendments": m.amendments,
            "state": m.state_text,
            "status": m.status,
            "revision": m.revision,
            "wakes": [datetime.fromisoformat(w).astimezone(tz).isoformat() for w in m.wakes],
            "waiting_for": m.waiting_for,
            "waits_on": _target(m),
            "recent_work": m.work_record[-5:],
            "unread_events": len(unread),
            "now": datetime.now(tz).isoformat(),
        },
        ensure_ascii=False,
    )


def _target(m: Matter) -> str | None:
    """The event or task it waits for, and once met or gone, what happened."""
    if not m.waits_on:
        return None
    outcome = m.waits_on.get("outcome")
    return describe(m.waits_on) + (f"; woke: {outcome}" if outcome else "")


async def events_read(ctx: MatterTurnContext) -> str:
    """New events for this Matter (requests and amendments handed over by the Bot). Reading
    them marks them read when the turn settles."""
    async with ctx.services.db.read() as tx:
        fresh = [
            i
            for i in await matters.unread_items(tx, ctx.session_id)
            if i.id not in ctx.read_item_ids
        ]
    ctx.read_item_ids += [i.id for i in fresh]
    if not fresh:
        return "no new events"
    tz = ctx.services.settings.tz
    return "\n".join(
        f"- {i.created_at.astimezone(tz):%Y-%m-%d %H:%M} {i.payload.get('request') or ''}"
        + (f" (note from the assistant: {i.payload['note']})" if i.payload.get("note") else "")
        for i in fresh
    )


async def checkpoint(ctx: MatterTurnContext, state: str) -> str:
    """Save where the work stands (replaces the state text; bumps the revision)."""
    revision = await ctx.matters.checkpoint(ctx.matter_id, state)
    return f"saved; revision is now {revision}"


async def settle(
    ctx: MatterTurnContext,
    expected_revision: ToolCount,
    disposition: Literal["continue", "wait", "complete"],
    reason: str,
    summary: str,
    wakes: list[datetime] | None = None,
    waiting_for: str | None = None,
    target_kind: TargetKind | None = None,
    target_id: str | None = None,
) -> str:
    """End this turn: `continue` (more work now), `wait` (until a wake time: ISO 8601 with a
    time zone, in the future and within a year; say what you wait for) or `complete` (the
    objective is met; refused while events are unread). A wait may instead (or as well)
    name a target: the owner's calendar event to start or end, or Feishu task to be
    completed (`target_id`: the event id, task guid or a rec-N of it from memory_search);
    it wakes when the synced calendar or task list shows it, or shows it cancelled or
    deleted. An independent reviewer checks a wait or complete first; if it rejects, work
    on its feedback and settle again."""
    if ctx.halted is not None:
        raise ToolError(f"this turn is over: {ctx.halted}")
    target = await _resolve_target(ctx, disposition, target_kind, target_id)
    request = SettleRequest(
        expected_revision,
        Disposition(disposition),
        reason,
        summary,
        tuple(wakes or ()),
        waiting_for,
        target,
    )
    try:
        earlier = await ctx.matters.earlier(ctx.matter_id, request)
        if earlier is not None:  # this very settle was applied before: converge
            ctx.settled = earlier.status
            return (
                f"settled: status {earlier.status}, revision {earlier.revision} (already "
                "applied earlier)"
            )
        matter = await ctx.load()
        async with ctx.services.db.read() as tx:
            unread_before = {i.id for i in await matters.unread_items(tx, ctx.session_id)}
        # The rules first: no reviewer is paid to look at a settle that cannot stand.
        check(
            request,
            revision=matter.revision,
            status=matter.status,
            unread=len(unread_before - set(ctx.read_item_ids)),
            now=utcnow(),
        )
    except SettleRefused as exc:
        raise ToolError(str(exc)) from None
    if request.disposition is not Disposition.CONTINUE:  # continuing stops nothing: no review
        await ctx.matters.note_on_card(ctx.matter_id, "waiting for review")
        await _reviewed(ctx, matter, request, unread_before)
    try:
        outcome = await ctx.matters.settle(
            ctx.matter_id,
            request,
            read_item_ids=ctx.read_item_ids,
            result_reported=ctx.reported_result,
        )
    except SettleRefused as exc:
        raise ToolError(str(exc)) from None
    ctx.settled = outcome.status
    return f"settled: status {outcome.status}, revision {outcome.revision}" + (
        " (already applied earlier)" if outcome.converged else ""
    )


async def _resolve_target(
    ctx: MatterTurnContext, disposition: str, kind: str | None, ref: str | None
) -> dict[str, Any] | None:
    if kind is None and ref is None:
        return None
    if kind is None or not ref:
        raise ToolError("a target needs both target_kind and target_id")
    if disposition != Disposition.WAIT:
        raise ToolError("a target is only for disposition 'wait'")
    try:
        async with ctx.services.db.read() as tx:
            return await resolve(tx, kind, ref, ctx.visibility, utcnow())
    except WaitRefused as exc:
        raise ToolError(str(exc)) from None


async def _reviewed(
    ctx: MatterTurnContext, matter: Matter, request: SettleRequest, unread_before: set[int]
) -> None:
    """Returns when the reviewer approves the settle; raises ToolError (for the agent) when
    it rejects, when new events make the review moot, or when the reviewer gives no verdict
    (then the turn halts: the Matter is paused rather than left looping)."""
    try:
        verdict = await review(
            # the reviewer's own model when the runtime has one, else the task agent's
            ctx.services.models.get(ModelRole.REVIEWER) or ctx.model,
            objective=matter.objective,
            state_text=matter.state_text,
            recent_work=[str(w) for w in matter.work_record[-5:]],
            request=request,
        )
    except NoVerdict as exc:
        ctx.halted = f"the reviewer gave no verdict twice (last answer: {str(exc)[:200]})"
        raise ToolError(f"not settled: {ctx.halted}; the Matter will be paused") from None
    async with ctx.services.db.read() as tx:
        unread_after = {i.id for i in await matters.unread_items(tx, ctx.session_id)}
    if unread_after - unread_before:
        raise ToolError(
            "review invalidated: new events arrived meanwhile; read them "
            "(events_read) and settle again"
        )
    if not verdict.approved:
        await ctx.matters.record_rejection(ctx.matter_id)
        raise ToolError(f"rejected by the reviewer: {verdict.feedback}")


async def message_bot(
    ctx: MatterTurnContext,
    kind: Literal["progress", "result", "blocker", "question"],
    text: str,
) -> str:
    """Tell the assistant (not the user directly) about progress, a result, a blocker or a
    question; it decides what the user hears."""
    ctx.messages += 1
    await ctx.matters.report(ctx.matter_id, kind, text, f"{ctx.turn_key}:msg:{ctx.messages}")
    if kind == "result":
        ctx.reported_result = True
    return "sent to the assistant"


def _access(ctx: MatterTurnContext) -> recall.MemoryAccess:
    settings = ctx.services.settings
    return recall.MemoryAccess(
        db=ctx.services.db,
        search=ctx.services.search,
        visibility=ctx.visibility,
        tz=settings.tz,
        tool_output=settings.index_tool_output,
    )


async def memory_search(
    ctx: MatterTurnContext, query: str, limit: ToolCount = recall.DEFAULT_HITS
) -> str:
    """Search chat history, mail and task logs this task may see (what its conversation may
    see). Read-only. Each hit has a ref for memory_original. Results are quoted data."""
    return await recall.memory_search(_access(ctx), query, limit)


async def memory_original(ctx: MatterTurnContext, ref: str, offset: ToolCount = 0) -> str:
    """Read one message or mail found by memory_search, by its ref, in parts of 4000
    characters (`offset` for the next part). Read-only."""
    return await recall.memory_original(_access(ctx), ref, offset)


async def memory_index_read(ctx: MatterTurnContext, name: str, query: str | None = None) -> str:
    """Read a named memory index: its entries (or those containing `query`), with refs for
    memory_original. Read-only."""
    return await recall.memory_index_read(_access(ctx), name, query)


MatterToolInstaller = Callable[[ToolRegistry[MatterTurnContext]], None]


def matter_tools(
    installers: Sequence[MatterToolInstaller] = (),
) -> ToolRegistry[MatterTurnContext]:
    """The task agent's own tools, and those `installers` add (the outward actions' tools,
    handed in by the runtime: bot/actions/toolsets.py)."""
    registry: ToolRegistry[MatterTurnContext] = ToolRegistry()
    for tool in (
        matter_read,
        events_read,
        checkpoint,
        settle,
        message_bot,
        memory_search,
        memory_original,
        memory_index_read,
    ):
        registry.tool(tool)
    for install in installers:
        install(registry)
    return registry


__all__ = ["MatterToolInstaller", "MatterTurnContext", "ToolError", "matter_tools"]
