"""The indexing agent's tools: read the range's records in bounded batches, read and write
entries (with an expected revision), and checkpoint. No other writes, no messages to anyone:
notices come from the maintenance worker, never from the model."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import tzinfo

from bot.agent.tools import ToolError, ToolRegistry
from bot.parsing import ToolCount, parse_id
from storage.db import Database
from storage.models import SourceRecord
from storage.repos import memory_indexes as repo
from storage.repos.source_records import is_tombstone
from storage.types import utcnow

BATCH_RECORDS = 20
RECORD_CHARS = 1500
ENTRY_CHARS = 2000
ENTRIES_SHOWN = 50
_REC = re.compile(r"^rec-([0-9]+)$")


@dataclass
class IndexerContext:
    db: Database
    tz: tzinfo
    index_id: int
    scopes: list[str] | None
    start: int  # organized up to here when the turn began
    range_end: int
    read_to: int = 0  # records up to here were shown to the agent in this turn
    written: int = 0
    finished: str | None = None  # "complete" | "partial" once checkpointed
    note: str = ""

    def __post_init__(self) -> None:
        self.read_to = self.read_to or self.start


def render_record(rec: SourceRecord, tz: tzinfo) -> str:
    when = rec.sent_at.astimezone(tz).strftime("%Y-%m-%d %H:%M") if rec.sent_at else "undated"
    what = f"subject {rec.title!r}" if rec.source.startswith("email:") else f"in {rec.title!r}"
    text = " ".join(rec.text.split())
    clipped = text[:RECORD_CHARS] + (" …" if len(text) > RECORD_CHARS else "")
    return f"[rec-{rec.id}] {when} from {rec.author or 'unknown'}, {what}: {clipped}"


async def records_read(ctx: IndexerContext) -> str:
    """The next records of this range (up to 20), oldest first, each with its ref
    (rec-N). Call again for more; when none are left, checkpoint with complete=true."""
    async with ctx.db.read() as tx:
        batch = await repo.records_in_range(
            tx, ctx.scopes, ctx.read_to, ctx.range_end, BATCH_RECORDS
        )
        left = await repo.count_in_range(
            tx, ctx.scopes, batch[-1].id if batch else ctx.read_to, ctx.range_end
        )
    if not batch:
        return "nothing left in this range: call checkpoint with complete=true"
    ctx.read_to = batch[-1].id
    # A tombstone (a recalled message) stands for nothing: the index never cites it.
    lines = [render_record(r, ctx.tz) for r in batch if not is_tombstone(r.payload)]
    tail = f"{left} more records in this range." if left else "That was the last of this range."
    return "\n".join([*lines, tail])


async def entries_read(ctx: IndexerContext, contains: str | None = None) -> str:
    """The index's entries (up to 50, by key), optionally only those whose key or text
    contains `contains`: key, revision (pass it to entry_write to replace one), refs, text."""
    async with ctx.db.read() as tx:
        found = await repo.entries(tx, ctx.index_id, contains=contains, limit=ENTRIES_SHOWN)
    if not found:
        return "no entries yet" if not contains else f"no entry contains {contains!r}"
    return "\n".join(
        f"{e.key} (revision {e.revision}; refs {', '.join(f'rec-{r}' for r in e.refs)}): {e.text}"
        for e in found
    )


async def entry_write(
    ctx: IndexerContext, key: str, text: str, refs: list[str], expected_revision: ToolCount = 0
) -> str:
    """Create (expected_revision 0) or replace (the revision entries_read showed) one entry.
    `refs` are the records it was made from (rec-N, from records_read or the entry itself):
    every entry must lead back to its originals."""
    key, text = key.strip(), text.strip()
    if not key or not text:
        raise ToolError("key and text must not be empty")
    if len(key) > 200 or len(text) > ENTRY_CHARS:
        raise ToolError(f"key at most 200 and text at most {ENTRY_CHARS} characters")
    seqs = []
    for ref in refs:
        m = _REC.match(ref.strip())
        if m is None:
            raise ToolError(f"{ref!r} is not a record ref: use rec-N as records_read shows")
        seq = parse_id(m.group(1))
        if seq is None:  # a number no record can have
            raise ToolError(f"{ref.strip()} is not a record of this index")
        seqs.append(seq)
    if not seqs:
        raise ToolError("give at least one ref: the records this entry was made from")
    await _check_refs(ctx, seqs)
    async with ctx.db.write() as tx:
        result = await repo.write_entry(
            tx,
            ctx.index_id,
            key=key,
            text=text,
            refs=sorted(set(seqs)),
            expected_revision=expected_revision,
            now=utcnow(),
        )
    if not result.ok:
        raise ToolError(
            f"revision conflict: {key!r} is at revision {result.revision}; read it with "
            "entries_read, merge, and write again with that revision"
        )
    ctx.written += 1
    return f"written {key!r} (revision {result.revision})"


async def _check_refs(ctx: IndexerContext, seqs: list[int]) -> None:
    wanted = sorted(set(seqs))
    async with ctx.db.read() as tx:
        rows = [await tx.get(SourceRecord, seq) for seq in wanted]
    for seq, row in zip(wanted, rows, strict=True):
        if (
            row is None
            or is_tombstone(row.payload)
            or (ctx.scopes is not None and row.scope not in ctx.scopes)
        ):
            raise ToolError(f"rec-{seq} is not a record of this index")


async def checkpoint(ctx: IndexerContext, complete: bool, note: str = "") -> str:
    """End this turn. complete=true when every record of the range was read and organized
    (coverage then moves to the range's end); complete=false to continue after the records
    you have read, next time."""
    if complete:
        async with ctx.db.read() as tx:
            unread = await repo.count_in_range(tx, ctx.scopes, ctx.read_to, ctx.range_end)
        if unread:
            raise ToolError(
                f"{unread} records of this range are unread: read them with records_read, "
                "or checkpoint with complete=false"
            )
    ctx.finished = "complete" if complete else "partial"
    ctx.note = note.strip()[:500]
    return "checkpointed; the turn ends"


def indexer_tools() -> ToolRegistry[IndexerContext]:
    registry: ToolRegistry[IndexerContext] = ToolRegistry()
    for tool in (records_read, entries_read, entry_write, checkpoint):
        registry.tool(tool)
    return registry
