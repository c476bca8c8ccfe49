"""Recall by a model (MAKA_WORKHUB_RECALL=model, and `maka eval recall --router model`): it
sees the same candidate list the Bot's tasks_candidates tool returns and answers with a ref,
"new" or "clarify". Anything it gets wrong in form (an unknown ref, unreadable output, an
error) falls back to the reference router, marked as a fallback (the evaluation counts those
apart, never as model decisions), and a ref outside the set can never be chosen. A `new` the
user's words do not ask for (bot/workhub/new_task.py) is proposed as a question."""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from datetime import tzinfo

from bot.agent.framing import DATA_RULE, quote_data
from bot.llm.client import ModelClient
from bot.llm.types import Message, ModelError
from bot.workhub.candidates import CandidateSet, view
from bot.workhub.new_task import asks_for_new
from bot.workhub.router import Decision, Outcome, route

INSTRUCTIONS = (
    "Route the user's request to one of the candidate tasks. Answer with JSON only: "
    '{"outcome": "existing", "ref": "<candidate ref>"}, {"outcome": "new"} (only if the user '
    'explicitly asks for a new task) or {"outcome": "clarify"} (when unsure, or nothing '
    f"fits). Search evidence is a weak hint. {DATA_RULE}"
)
_JSON = re.compile(r"\{.*\}", re.DOTALL)


class ModelRouterAdapter:
    def __init__(self, model: ModelClient, tz: tzinfo) -> None:
        self.model, self.tz = model, tz

    def prompt(self, request: str, cset: CandidateSet) -> list[Message]:
        candidates = json.dumps(
            [asdict(view(c, self.tz)) for c in cset.candidates], ensure_ascii=False
        )
        return [
            Message.system(INSTRUCTIONS),
            Message.user(f"Request: {request}\n" + quote_data("candidates", candidates)),
        ]

    async def __call__(self, request: str, cset: CandidateSet) -> Decision:
        try:
            completion = await self.model.complete(
                self.prompt(request, cset), purpose="workhub_route"
            )
            decision = self._parse(completion.text or "", cset)
        except (ModelError, ValueError, KeyError) as exc:
            fallback = route(request, cset)
            fallback.reason = f"model routing failed ({exc}); reference router used"
            fallback.fallback = True
            return fallback
        if decision.outcome is Outcome.NEW and not asks_for_new(
            request, [c.meta.name for c in cset.candidates]
        ):
            return Decision(
                Outcome.CLARIFY,
                reason="the model proposed a new task the user's words do not ask for",
            )
        return decision

    @staticmethod
    def _parse(text: str, cset: CandidateSet) -> Decision:
        match = _JSON.search(text)
        if match is None:
            raise ValueError("no JSON in the model's answer")
        try:
            answer = json.loads(match.group(0))
        except RecursionError:  # json.loads recurses per nesting level
            raise ValueError("the model's JSON is nested too deeply") from None
        outcome = Outcome(answer["outcome"])
        if outcome is not Outcome.EXISTING:
            return Decision(outcome, reason=str(answer.get("reason") or "model"))
        candidate = cset.by_ref(str(answer.get("ref")))
        if candidate is None:
            raise ValueError(f"unknown ref {answer.get('ref')!r}")
        return Decision(Outcome.EXISTING, candidate.meta.id, candidate.ref, "model")
