"""The independent review of every settle: a separate model call, no tools, bounded input.

It sees the objective, the state, the recent work and the proposed settle, nothing the
agent could use to argue; it approves, or rejects with feedback the agent then works on.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.agent.framing import DATA_RULE, quote_data
from bot.llm.client import ModelClient
from bot.llm.types import Message
from bot.matters.rules import SettleRequest

FIELD_CHARS = 1500
INSTRUCTIONS = (
    "You review a task agent's decision to settle its turn. Approve when the disposition "
    "fits the evidence: 'complete' only if the objective is actually met, 'wait' only with "
    "a sensible wake time and reason, 'continue' when work remains. Answer with exactly "
    "'APPROVE' or 'REJECT: <what is missing or wrong>'. " + DATA_RULE
)


@dataclass(frozen=True)
class Verdict:
    approved: bool
    feedback: str


async def review(
    model: ModelClient,
    *,
    objective: str,
    state_text: str,
    recent_work: list[str],
    request: SettleRequest,
) -> Verdict:
    proposal = (
        f"disposition: {request.disposition.value}\nreason: {request.reason}\n"
        f"summary: {request.summary}\n"
        f"wakes: {', '.join(w.isoformat() for w in request.wakes) or '-'}\n"
        f"waiting for: {request.waiting_for or '-'}"
    )
    body = "\n".join(
        [
            quote_data("objective", objective[:FIELD_CHARS]),
            quote_data("state", state_text[:FIELD_CHARS] or "(none)"),
            quote_data("recent work", "\n".join(recent_work)[-FIELD_CHARS:] or "(none)"),
            quote_data("proposed settle", proposal[:FIELD_CHARS]),
        ]
    )
    completion = await model.complete(
        [Message.system(INSTRUCTIONS), Message.user(body)], purpose="matter_review"
    )
    answer = (completion.text or "").strip()
    if answer.upper().startswith("APPROVE"):
        return Verdict(True, "")
    feedback = answer.split(":", 1)[1].strip() if ":" in answer else answer
    return Verdict(False, feedback or "the reviewer gave no reason")
