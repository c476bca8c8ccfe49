"""The Bot's routing tools. The user's words that are delegated come from the admitted inbox
item (the latest message of the turn), never from model output: the model only adds a note."""

from __future__ import annotations

import json
from dataclasses import asdict

from bot.agent.tools import ToolError, ToolRegistry
from bot.assistant.asking import asker_of, latest_message
from bot.assistant.turn_context import BatchItem, TurnContext
from bot.workhub.candidates import CandidateSet, view
from bot.workhub.recall import Proposal
from bot.workhub.router import Decision
from bot.workhub.service import CANCELLED_STATE, GateResult, Refusal, Requester, WorkHub

CLARIFY_HINT = "Do not guess: ask the user which task they mean (or whether to start a new one)."
# Refusals whose detail already says what to do next (asking which task would not help).
SELF_EXPLAINED = (Refusal.CANCELLED,)
CANCELLED_NOTE = "; that task is cancelled and takes no follow-ups: tell the user"


def _hub(ctx: TurnContext) -> WorkHub:
    return ctx.services.workhub


async def requester_of(ctx: TurnContext) -> Requester:
    """The asker (bot/assistant/asking.py) as WorkHub sees them."""
    asker = await asker_of(ctx)
    return Requester(ctx.conversation.id, asker.open_id, asker.role, asker.visibility)


def _text_of(item: BatchItem) -> str:
    # `item.text`: a clicked answer's words too (bot/channels/clicks.py), not only a message's
    return item.text or str(item.payload.get("text") or "")


def _user_words(ctx: TurnContext) -> dict[str, object]:
    latest = latest_message(ctx)
    if latest is None:
        raise ToolError("there is no user message in this turn to hand over")
    return {
        "request": _text_of(latest),
        "message_id": latest.message_id,
        "from": latest.payload.get("sender_id"),
        "conversation_id": ctx.conversation.id,
    }


def _result(result: GateResult, done: str) -> str:
    if result.ok:
        return done + (" (already done earlier)" if result.converged else "")
    assert result.refusal is not None
    hint = "" if result.refusal in SELF_EXPLAINED else f" {CLARIFY_HINT}"
    raise ToolError(f"{result.refusal.value}: {result.detail}.{hint}")


def _proposal(decision: Decision, cset: CandidateSet) -> Proposal:
    """Recall's proposal as the model reads it; one for a cancelled task says so, since
    tasks_delegate would refuse it."""
    proposal = Proposal.of(decision)
    chosen = cset.by_ref(proposal.ref) if proposal.ref else None
    if chosen is not None and chosen.meta.state == CANCELLED_STATE:
        return Proposal(proposal.proposal, proposal.reason + CANCELLED_NOTE, proposal.ref)
    return proposal


async def tasks_candidates(ctx: TurnContext) -> str:
    """List the tasks the user's latest message may belong to: the 32 most recent, with
    name, state (active, waiting, blocked, done, cancelled: a done task takes a follow-up
    and works again, a cancelled one does not and tasks_delegate refuses it), last
    activity, a short summary and search evidence for the user's words (a weak hint, not
    proof), and `recall`: a proposal
    (existing + ref, new, or clarify) with its reason. You decide; when in doubt ask the
    user. Use the returned candidate_set_id and a candidate's ref with tasks_delegate or
    tasks_status."""
    latest = latest_message(ctx)
    request = _text_of(latest) if latest else ""
    cset, decision = await _hub(ctx).recall(await requester_of(ctx), request)
    tz = ctx.services.settings.tz
    body = {
        "candidate_set_id": cset.set_id,
        "evidence": cset.evidence_status,
        "candidates": [asdict(view(c, tz)) for c in cset.candidates],
        "recall": asdict(_proposal(decision, cset)) if decision else None,
    }
    return json.dumps(body, ensure_ascii=False)


async def tasks_delegate(
    ctx: TurnContext, candidate_set_id: str, candidate_ref: str, text: str
) -> str:
    """Hand the user's latest message to an existing task (a ref from tasks_candidates), not
    a cancelled one. `text` is your short note for the task; the user's own words are
    attached for you."""
    hub = _hub(ctx)
    payload = {**_user_words(ctx), "note": text}
    result = await hub.delegate(
        await requester_of(ctx),
        action_id=ctx.next_action_id("delegate"),
        candidate_set_id=candidate_set_id,
        candidate_ref=candidate_ref,
        payload=payload,
    )
    return _result(result, "delegated")


async def tasks_create(ctx: TurnContext, title: str, text: str) -> str:
    """Start a NEW task, only when the user's latest message asks for one (the gate refuses
    otherwise, and refuses words that name an existing task: then ask the user). `text` is
    your note; the user's words are attached."""
    payload = {**_user_words(ctx), "note": text}
    requester = await requester_of(ctx)
    result = await _hub(ctx).create(
        requester, action_id=ctx.next_action_id("create"), title=title, payload=payload
    )
    return _result(result, f"created task {title!r}")


async def tasks_status(ctx: TurnContext, candidate_ref: str) -> str:
    """Where a task stands: name, state, last activity, summary (a ref from tasks_candidates)."""
    cset = await _hub(ctx).candidates(await requester_of(ctx))
    candidate = cset.by_ref(candidate_ref)
    if candidate is None:
        raise ToolError("candidate_unavailable: list the candidates again with tasks_candidates")
    return json.dumps(asdict(view(candidate, ctx.services.settings.tz)), ensure_ascii=False)


def install_workhub_tools(registry: ToolRegistry[TurnContext]) -> None:
    for tool in (tasks_candidates, tasks_delegate, tasks_create, tasks_status):
        registry.tool(tool)
