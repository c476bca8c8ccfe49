"""The independent review of a settle that stops the work (`wait`, `complete`): a separate
model call with bounded input and one tool, `verdict`, whose typed signature is the only way
to answer. Free text is never parsed.

The reviewer sees the objective, the state, the recent work and the proposed settle, nothing
the agent could use to argue; it approves, or rejects with feedback the agent then works on.
An answer without one valid verdict call is asked for once more; a second such answer raises
`NoVerdict` (the caller pauses the Matter: a reviewer that cannot answer must not loop).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from bot.agent.framing import DATA_RULE, quote_data
from bot.agent.tools import ToolError, ToolRegistry
from bot.llm.client import ModelClient
from bot.llm.types import Message, ToolCall
from bot.matters.rules import SettleRequest
from bot.matters.waits import describe

log = logging.getLogger(__name__)

FIELD_CHARS = 1500
PURPOSE = "matter_review"
INSTRUCTIONS = (
    "You review a task agent's decision to stop working on its task for now. Approve when "
    "the disposition fits the evidence: 'complete' only if the objective is actually met, "
    "'wait' only with a sensible wake time and reason. Answer only by calling the verdict "
    "tool once: decision 'approve', or 'reject' with a reason saying what is missing or "
    "wrong. " + DATA_RULE
)
ASK_AGAIN = (
    "Your answer gave no verdict ({problem}). You must call the verdict tool exactly once, "
    "with decision 'approve' or 'reject' and a reason; do not answer in text."
)
NO_REASON = "the reviewer gave no reason"


@dataclass(frozen=True)
class Verdict:
    approved: bool
    feedback: str


class NoVerdict(Exception):
    """The reviewer answered without a valid verdict call; the message says how."""


@dataclass
class Ballot:
    """Where the verdict tool puts the reviewer's decision."""

    verdict: Verdict | None = None


async def verdict(ballot: Ballot, decision: Literal["approve", "reject"], reason: str) -> str:
    """Your verdict on the proposed settle: approve it, or reject it with the reason (what is
    missing or wrong) the agent will work on."""
    if ballot.verdict is not None:
        raise ToolError("more than one verdict")
    feedback = reason.strip()
    ballot.verdict = Verdict(decision == "approve", feedback or NO_REASON)
    return "recorded"


VERDICT_TOOLS: ToolRegistry[Ballot] = ToolRegistry()
VERDICT_TOOLS.tool(verdict)


async def read_verdict(calls: Sequence[ToolCall]) -> Verdict:
    """The verdict of an answer that is exactly one valid verdict call; otherwise NoVerdict."""
    if not calls:
        raise NoVerdict("no tool call, only text")
    if len(calls) > 1:
        raise NoVerdict(f"{len(calls)} tool calls instead of one")
    ballot = Ballot()
    outcome = await VERDICT_TOOLS.run(ballot, calls[0])
    if outcome.error or ballot.verdict is None:
        raise NoVerdict(outcome.output.removeprefix("error: "))
    return ballot.verdict


def _proposal(
    objective: str, state_text: str, recent_work: list[str], request: SettleRequest
) -> str:
    proposal = (
        f"disposition: {request.disposition.value}\nreason: {request.reason}\n"
        f"summary: {request.summary}\n"
        f"wakes: {', '.join(w.isoformat() for w in request.wakes) or '-'}\n"
        f"waiting for: {request.waiting_for or '-'}"
        + (f"\nwaits on: {describe(request.target)}" if request.target else "")
    )
    return "\n".join(
        [
            quote_data("objective", objective[:FIELD_CHARS]),
            quote_data("state", state_text[:FIELD_CHARS] or "(none)"),
            quote_data("recent work", "\n".join(recent_work)[-FIELD_CHARS:] or "(none)"),
            quote_data("proposed settle", proposal[:FIELD_CHARS]),
        ]
    )


async def review(
    model: ModelClient,
    *,
    objective: str,
    state_text: str,
    recent_work: list[str],
    request: SettleRequest,
) -> Verdict:
    """Ask the reviewer (at most twice). Raises NoVerdict, and ModelError from the model."""
    prompt = [
        Message.system(INSTRUCTIONS),
        Message.user(_proposal(objective, state_text, recent_work, request)),
    ]
    tools = VERDICT_TOOLS.specs()
    completion = await model.complete(prompt, tools, purpose=PURPOSE)
    try:
        return await read_verdict(completion.tool_calls)
    except NoVerdict as exc:
        log.warning("the reviewer gave no verdict (%s); asking again", exc)
        again = [*prompt, Message.user(ASK_AGAIN.format(problem=exc))]
    completion = await model.complete(again, tools, purpose=PURPOSE)
    return await read_verdict(completion.tool_calls)
