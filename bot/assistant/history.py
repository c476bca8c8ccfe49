"""The Bot's memory of its own conversation: a window of recent turns plus a rolling summary.

Each turn is logged in the conversation's coordination Session as a `user` event (the batch
as the model saw it) and an `assistant` event (what was actually sent to the user). The model
input holds the newest turns that fit the budget; older turns are folded into a `summary`
event (one line per turn, oldest lines dropped past its own cap) whose `covered_seq` says
how far it reaches. The originals stay in `session_events`, so nothing is lost by folding.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from bot.llm.tokens import estimate_tokens
from storage.repos import sessions

SUMMARY_MAX_TOKENS = 1200
MAX_WINDOW_TURNS = 24
DIGEST_CHARS = 160
OMITTED = "(older lines omitted)"


@dataclass(frozen=True)
class PastTurn:
    last_seq: int
    at: datetime
    user: str
    assistant: str

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.user) + estimate_tokens(self.assistant) + 8

    def digest(self) -> str:
        return (
            f"- {self.at:%Y-%m-%d %H:%M} user: {_clip(self.user)} | "
            f"assistant: {_clip(self.assistant)}"
        )


@dataclass(frozen=True)
class Context:
    summary: str
    window: list[PastTurn]
    new_summary: tuple[str, int] | None  # (text, covered_seq) to store, when turns were folded


EMPTY = Context("", [], None)  # a Session just made has no past


async def load_context(
    tx: AsyncSession, session_id: int, budget_tokens: int, summary_max: int = SUMMARY_MAX_TOKENS
) -> Context:
    """`summary_max`: what the summary may take; less than SUMMARY_MAX_TOKENS when the rest of
    the model's input leaves less (a small context), so the whole stays within it."""
    latest, events = await sessions.since_summary(tx, session_id, ("user", "assistant"))
    summary = latest.text if latest else ""
    if estimate_tokens(summary) > summary_max:  # shown shorter; stored as it was
        summary = fold(summary, [], summary_max)
    turns = _pair(events)

    remaining = budget_tokens - estimate_tokens(summary)
    window: list[PastTurn] = []
    for turn in reversed(turns):
        if len(window) >= MAX_WINDOW_TURNS or turn.tokens > remaining:
            break
        window.insert(0, turn)
        remaining -= turn.tokens
    folded = turns[: len(turns) - len(window)]
    if not folded:
        return Context(summary, window, None)
    new_text = fold(summary, folded, summary_max)
    return Context(new_text, window, (new_text, folded[-1].last_seq))


def fold(summary: str, turns: list[PastTurn], most: int = SUMMARY_MAX_TOKENS) -> str:
    lines = [line for line in summary.splitlines() if line and line != OMITTED]
    lines += [t.digest() for t in turns]
    dropped = summary.startswith(OMITTED)
    # The OMITTED line is counted too: the summary as shown stays within `most`.
    while lines and estimate_tokens("\n".join([OMITTED, *lines])) > most:
        lines.pop(0)
        dropped = True
    return "\n".join(([OMITTED] if dropped else []) + lines)


def _pair(events: list[sessions.Event]) -> list[PastTurn]:
    turns: list[PastTurn] = []
    pending: sessions.Event | None = None
    for event in events:
        if event.kind == "user":
            pending = event
        elif event.kind == "assistant" and pending is not None:
            turns.append(PastTurn(event.seq, pending.created_at, pending.text, event.text))
            pending = None
    return turns


def _clip(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= DIGEST_CHARS else flat[: DIGEST_CHARS - 1] + "…"
