"""The two passes of a round, each one agent loop over its own registry
(bot/discovery/tools.py). Discovery looks around and writes notes; Judgement reads the whole
notebook and the owner's reactions to earlier findings, and emits zero or more findings."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bot.agent.framing import DATA_RULE, quote_data
from bot.agent.loop import AgentLoop
from bot.agent.tools import ToolRegistry
from bot.discovery.tools import PassContext, render_note
from bot.llm.client import ModelClient
from bot.llm.types import Message, ModelError
from sources.feishu.owner_items import OwnerItem
from storage.models import Finding, FindingFeedback, NotebookNote

PURPOSES = ("discovery_turn", "judgement_turn")  # how their model calls are recorded

DISCOVERY_PROMPT = "\n".join(
    [
        "You look for things a busy person would want noticed in their own chats and mail.",
        "Search memory and read originals; then append short notes with note_append: "
        "interests, situations (promises, deadlines, threads waiting on the owner), "
        "resources, unknowns, connections (two people on the same thing), corrections of "
        "earlier notes. Each note dated by the tool, with the refs it came from; set due_on "
        "for deadlines. Do not repeat notes the notebook already has. End with pass_end.",
        "You never talk to anyone: your notes are read by a judge, not by the owner.",
        DATA_RULE,
    ]
)
JUDGEMENT_PROMPT = "\n".join(
    [
        "You judge what the owner of a personal assistant should hear now.",
        "Read the notebook and earlier findings with the owner's reactions; check what you "
        "need with memory tools; append notes if you learn something. Then emit findings "
        "with finding_emit, each short, concrete and backed by refs, only for what is "
        "useful and timely and not already told (unless something new changed it). Often "
        "the right number is zero. The owner's reactions teach what they value. End with "
        "pass_end.",
        "You never talk to anyone: the assistant tells the owner your findings.",
        DATA_RULE,
    ]
)


@dataclass(frozen=True)
class PassResult:
    ok: bool
    error: str | None = None


class Pass:
    def __init__(
        self,
        model: ModelClient,
        tools: ToolRegistry[PassContext],
        *,
        purpose: str,
        system: str,
        timeout: float,
        max_steps: int = 16,
    ) -> None:
        self.loop = AgentLoop(model, tools, purpose=purpose, max_steps=max_steps)
        self.system, self.timeout = system, timeout

    async def run(self, ctx: PassContext, briefing: str) -> PassResult:
        prompt = [Message.system(self.system), Message.user(briefing)]
        try:
            async with asyncio.timeout(self.timeout):
                await self.loop.run(ctx, prompt, ended=lambda c: c.ended)
        except TimeoutError:
            return PassResult(False, f"the {ctx.author} pass took longer than {self.timeout:.0f}s")
        except ModelError as exc:
            return PassResult(False, f"the model failed: {exc}")
        return PassResult(True)


def upcoming_lines(items: Sequence[OwnerItem], ctx: PassContext) -> list[str]:
    """The owner's events starting and tasks due soon, named for both passes (quoted: their
    titles are other people's words)."""
    if not items:
        return []
    shown = "\n".join(_upcoming(i, ctx) for i in items)
    return ["Coming up for the owner:", quote_data("coming up", shown)]


def _upcoming(item: OwnerItem, ctx: PassContext) -> str:
    when = item.start if item.kind == "event" else item.due
    at = when.astimezone(ctx.tz).strftime("%Y-%m-%d %H:%M") if when else "?"
    what = "starts" if item.kind == "event" else "due"
    return f"- {item.kind} {item.title!r} {what} {at} [rec-{item.record_id}]"


def discovery_briefing(
    reason: str,
    notes: Sequence[NotebookNote],
    ctx: PassContext,
    upcoming: Sequence[OwnerItem] = (),
) -> str:
    shown = "\n".join(render_note(n, ctx.tz) for n in notes) or "(empty)"
    return "\n".join(
        [
            f"Why this round: {reason}.",
            *upcoming_lines(upcoming, ctx),
            "The notebook's newest notes:",
            quote_data("notebook", shown),
        ]
    )


def judgement_briefing(
    reason: str,
    notes: Sequence[NotebookNote],
    earlier: Sequence[Finding],
    feedback: Mapping[int, Sequence[FindingFeedback]],
    ctx: PassContext,
    upcoming: Sequence[OwnerItem] = (),
) -> str:
    shown = "\n".join(render_note(n, ctx.tz) for n in notes) or "(empty)"
    told = "\n".join(_told(f, feedback.get(f.id, ()), ctx) for f in earlier) or "(none yet)"
    return "\n".join(
        [
            f"Why this round: {reason}.",
            *upcoming_lines(upcoming, ctx),
            "The notebook:",
            quote_data("notebook", shown),
            "Findings already told to the owner, with their reaction (silence is not rejection):",
            quote_data("findings", told),
        ]
    )


def _told(finding: Finding, feedback: Sequence[FindingFeedback], ctx: PassContext) -> str:
    if finding.delivered_at is None:
        when = "not sent yet"
    else:
        when = finding.delivered_at.astimezone(ctx.tz).strftime("%Y-%m-%d")
    reaction = "; ".join(_feedback(f) for f in feedback) or "no reaction yet"
    return f"F-{finding.id} {when}: {finding.text} [{', '.join(finding.refs)}] ({reaction})"


def _feedback(feedback: FindingFeedback) -> str:
    if feedback.kind == "reaction":
        return f"owner reacted with {feedback.text}"
    if feedback.kind == "reply":
        return f"owner replied: {feedback.text!r}"
    return f"owner's {feedback.kind}: {feedback.text!r}"
