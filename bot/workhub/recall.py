"""Recall: before the Bot's model decides where a request goes, a router proposes it (an
existing task by its ref, a new task, or a question), with its reason. The Bot's model
decides; the Action Gate validates. `maka eval recall` calls this same `propose` on candidate
sets assembled by the same code, so its figures are the product's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import tzinfo

from bot.config import RecallMode
from bot.llm.client import ModelClient
from bot.workhub.candidates import CandidateSet
from bot.workhub.model_router import ModelRouterAdapter
from bot.workhub.router import Decision, route


@dataclass(frozen=True)
class Proposal:
    """What the Bot's model reads next to the candidates."""

    proposal: str  # existing | new | clarify
    reason: str
    ref: str | None = None

    @classmethod
    def of(cls, decision: Decision) -> Proposal:
        return cls(decision.outcome.value, decision.reason, decision.ref)


class Recall:
    def __init__(self, mode: RecallMode, model: ModelClient | None, tz: tzinfo) -> None:
        if mode is RecallMode.MODEL and model is None:
            mode = RecallMode.REFERENCE  # no model configured: nothing else can propose
        self.mode = mode
        self.model_router = ModelRouterAdapter(model, tz) if model is not None else None

    async def propose(self, request: str, cset: CandidateSet) -> Decision | None:
        """None when recall is off or there are no user words to route."""
        if self.mode is RecallMode.OFF or not request.strip():
            return None
        if self.mode is RecallMode.MODEL and self.model_router is not None:
            return await self.model_router(request, cset)
        return route(request, cset)
