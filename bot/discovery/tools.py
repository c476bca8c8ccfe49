"""What Discovery and Judgement may do: read memory and the notebook, append notes, and (for
Judgement) emit findings. Read-only is enforced here, by what the registries hold: no
`send_user`, no delegation, no writes except notebook appends. A finding is kept in the
pass's context and stored by the round when Judgement ends (bot/discovery/rounds.py), so a
Judgement that dies half-way emits nothing."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, tzinfo

from bot.agent.tools import ToolError, ToolRegistry
from bot.memory import recall
from bot.parsing import ToolCount
from storage.db import Database
from storage.models import NotebookNote
from storage.repos import discovery as repo
from storage.types import utcnow

KINDS = ("interest", "situation", "resource", "unknown", "connection", "correction")
NOTE_CHARS = 600
FINDING_CHARS = 1200
MAX_REFS = 12
NOTES_SHOWN = 60
_REF = re.compile(r"^(rec-[0-9]{1,19}|log-[0-9]{1,19}-[0-9]{1,10}|note-[0-9]{1,19})$")


@dataclass
class EmittedFinding:
    text: str
    refs: list[str]


@dataclass
class PassContext:
    db: Database
    access: recall.MemoryAccess  # the owner's view: everything
    tz: tzinfo
    round_id: int
    author: str  # discovery | judgement
    notes_added: int = 0
    findings: list[EmittedFinding] = field(default_factory=list)
    ended: bool = False


def render_note(note: NotebookNote, tz: tzinfo) -> str:
    when = note.created_at.astimezone(tz).strftime("%Y-%m-%d")
    due = f" (due {note.due_on.isoformat()})" if note.due_on else ""
    refs = f" [{', '.join(note.refs)}]" if note.refs else ""
    return f"note-{note.id} {when} {note.kind}{due}: {note.text}{refs}"


def _refs(refs: list[str]) -> list[str]:
    cleaned = [r.strip() for r in refs if r.strip()]
    for ref in cleaned:
        if not _REF.match(ref):
            raise ToolError(f"{ref!r} is not a ref: use rec-N, log-S-Q or note-N as shown")
    if len(cleaned) > MAX_REFS:
        raise ToolError(f"at most {MAX_REFS} refs")
    return list(dict.fromkeys(cleaned))


async def memory_search(
    ctx: PassContext, query: str, limit: ToolCount = recall.DEFAULT_HITS
) -> str:
    """Search the owner's chat history, mail and task logs. Each hit has a ref."""
    return await recall.memory_search(ctx.access, query, limit)


async def memory_original(ctx: PassContext, ref: str, offset: ToolCount = 0) -> str:
    """Read one message or mail by its ref (rec-12, log-3-7), 4000 characters at a time."""
    return await recall.memory_original(ctx.access, ref, offset)


async def memory_index_read(ctx: PassContext, name: str, query: str | None = None) -> str:
    """Read a named memory index: its entries, or those containing `query`."""
    return await recall.memory_index_read(ctx.access, name, query)


async def notebook_read(
    ctx: PassContext, kind: str | None = None, contains: str | None = None
) -> str:
    """The notebook's newest notes (up to 60, oldest first), optionally of one kind or
    containing some words."""
    async with ctx.db.read() as tx:
        found = await repo.notes(tx, limit=NOTES_SHOWN, kind=kind, contains=contains)
    if not found:
        return "the notebook has no such notes" if kind or contains else "the notebook is empty"
    return "\n".join(render_note(n, ctx.tz) for n in found)


async def note_append(
    ctx: PassContext, kind: str, text: str, refs: list[str] | None = None, due_on: str | None = None
) -> str:
    """Append one short, dated note. kind: interest, situation, resource, unknown,
    connection or correction. refs: where it came from (rec-N, log-S-Q, note-N). due_on:
    YYYY-MM-DD when the note is about a deadline."""
    if kind not in KINDS:
        raise ToolError(f"kind must be one of {', '.join(KINDS)}")
    text = " ".join(text.split())
    if not text or len(text) > NOTE_CHARS:
        raise ToolError(f"a note is 1 to {NOTE_CHARS} characters")
    due = None
    if due_on:
        try:
            due = date.fromisoformat(due_on.strip())
        except ValueError:
            raise ToolError(f"due_on {due_on!r}: write YYYY-MM-DD") from None
    async with ctx.db.write() as tx:
        note = await repo.append_note(
            tx, round_id=ctx.round_id, author=ctx.author, kind=kind, text=text,
            refs=_refs(refs or []), due_on=due, now=utcnow(),
        )  # fmt: skip
    ctx.notes_added += 1
    return f"noted as note-{note.id}"


async def finding_emit(ctx: PassContext, text: str, refs: list[str]) -> str:
    """Tell the owner something useful they do not know yet: one short finding, with the refs
    that back it (at least one). Emit nothing when nothing is worth their attention."""
    text = " ".join(text.split())
    if not text or len(text) > FINDING_CHARS:
        raise ToolError(f"a finding is 1 to {FINDING_CHARS} characters")
    checked = _refs(refs)
    if not checked:
        raise ToolError("a finding needs its evidence: at least one ref")
    ctx.findings.append(EmittedFinding(text, checked))
    return f"finding {len(ctx.findings)} kept; it goes to the owner when this pass ends"


async def pass_end(ctx: PassContext) -> str:
    """End this pass."""
    ctx.ended = True
    return "ended"


READING = (memory_search, memory_original, memory_index_read, notebook_read)


def discovery_tools() -> ToolRegistry[PassContext]:
    registry: ToolRegistry[PassContext] = ToolRegistry()
    for tool in (*READING, note_append, pass_end):
        registry.tool(tool)
    return registry


def judgement_tools() -> ToolRegistry[PassContext]:
    registry: ToolRegistry[PassContext] = ToolRegistry()
    for tool in (*READING, note_append, finding_emit, pass_end):
        registry.tool(tool)
    return registry
