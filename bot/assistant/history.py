"""The Bot's memory of its own conversation: a window of recent turns plus a rolling summary.

Each turn is logged in the conversation's coordination Session as a `user` event (the batch
as the model saw it) and an `assistant` event (what was actually sent to the user). The model
input holds the newest turns that fit the budget; older turns are folded into a `summary`
event (one line per turn, oldest lines dropped past its own cap) whose `covered_seq` says
how far it reaches. The originals stay in `session_events`, so nothing is lost by folding.

A thread in a chat is a context of its own: its turns' `user` events carry the thread's id
(`thread` in their payload), and a turn's window holds only its own thread's earlier turns
(the chat's, for a turn outside any thread). The summary stays one per conversation: a turn
folds every turn up to the newest of its own that did not fit (the window's order is the log's
order, and a summary covers a prefix of it), and never leaves more than MAX_UNFOLDED turns of
all threads unfolded, so what is read each turn stays bounded however many threads there are.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from bot.llm.tokens import estimate_tokens
from storage.repos import sessions

SUMMARY_MAX_TOKENS = 1200
MAX_WINDOW_TURNS = 24
MAX_UNFOLDED = 4 * MAX_WINDOW_TURNS  # turns of all threads left out of the summary, at most
DIGEST_CHARS = 160
OMITTED = "(older lines omitted)"


@dataclass(frozen=True)
class PastTurn:
    last_seq: int
    at: datetime
    user: str
    assistant: str
    thread: str | None = None

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
    tx: AsyncSession,
    session_id: int,
    budget_tokens: int,
    summary_max: int = SUMMARY_MAX_TOKENS,
    *,
    thread: str | None = None,
) -> Context:
    """`summary_max`: what the summary may take; less than SUMMARY_MAX_TOKENS when the rest of
    the model's input leaves less (a small context), so the whole stays within it. `thread`:
    the window holds that thread's turns only (None: the chat's, outside any thread)."""
    latest, events = await sessions.since_summary(tx, session_id, ("user", "assistant"))
    summary = latest.text if latest else ""
    if estimate_tokens(summary) > summary_max:  # shown shorter; stored as it was
        summary = fold(summary, [], summary_max)
    turns = _pair(events)

    remaining = budget_tokens - estimate_tokens(summary)
    window: list[PastTurn] = []
    keep_from = max(0, len(turns) - MAX_UNFOLDED)  # the turns before it are folded
    for index in range(len(turns) - 1, keep_from - 1, -1):
        turn = turns[index]
        if turn.thread != thread:
            continue
        if len(window) >= MAX_WINDOW_TURNS or turn.tokens > remaining:
            keep_from = index + 1
            break
        window.insert(0, turn)
        remaining -= turn.tokens
    folded = turns[:keep_from]
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
            thread = (pending.payload or {}).get("thread")
            turns.append(
                PastTurn(
                    event.seq,
                    pending.created_at,
                    pending.text,
                    event.text,
                    str(thread) if thread else None,
                )
            )
            pending = None
    return turns


def _clip(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= DIGEST_CHARS else flat[: DIGEST_CHARS - 1] + "…"
