"""Recall for the Bot and task agents: search what the conversation may see, then read an
original. Both go through the visibility rule (bot/assistant/visibility.py): a search is
filtered to the visible scopes, and an original is shown only when its scope is visible, so a
group never reads the owner's mail or DMs (unless the owner shared that source there).

Results reach the model as tool output, which the agent loop frames as quoted data
(bot/agent/framing.py): a mail that says "ignore your instructions" is something someone
wrote, not an instruction. Each hit carries a short ref the model passes
to `memory_original`: `rec-<seq>` for a synced chat message or mail, `log-<session>-<seq>`
for a task's log line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import tzinfo
from typing import Any

from bot.agent.tools import ToolError
from bot.assistant.visibility import Visibility
from bot.attachments.records import attachment_of, described
from bot.memory.indexes.service import sees_index
from bot.memory.search import SearchService
from bot.memory.session_index import MESSAGE_KINDS, TOOL_KINDS, conversation_scope
from bot.parsing import MAX_INT32, parse_id
from sources.feishu.records import holds_chat_messages
from storage.db import Database
from storage.models import SourceRecord
from storage.repos import memory_indexes, originals
from storage.repos.source_records import is_tombstone
from storage.search import SearchHit

DEFAULT_HITS = 8
MAX_HITS = 20
ORIGINAL_CHARS = 4000
EXCERPT_CHARS = 300
INDEX_ENTRIES = 30
_REF = re.compile(r"^\s*(?:rec-([0-9]+)|log-([0-9]+)-([0-9]+))\s*$")
NOT_VISIBLE = "no such item here: use a ref from memory_search (rec-… or log-…-…)"


@dataclass(frozen=True)
class MemoryAccess:
    """What a recall needs: where to look, and what the asker may see."""

    db: Database
    search: SearchService
    visibility: Visibility
    tz: tzinfo
    tool_output: bool = False  # tool results are readable only when they are indexed


async def memory_search(access: MemoryAccess, query: str, limit: int = DEFAULT_HITS) -> str:
    if not query.strip():
        raise ToolError("query is empty: say what to look for")
    if access.visibility.sees_nothing:
        return "nothing found (this conversation may not search memory)"
    limit = max(1, min(limit, MAX_HITS))
    hits = await access.search.try_search(query, access.visibility.search_filters(), limit)
    if hits is None:
        return (
            "memory search is unavailable right now (the search backend failed); tell the user "
            "you cannot look it up at the moment rather than guessing"
        )
    if not hits:
        return f"nothing found for {query!r}"
    records = await _records_of(access.db, hits)
    lines = [line for hit in hits if (line := _hit_line(hit, records, access.tz))]
    if not lines:
        return f"nothing found for {query!r}"
    return "\n".join([*lines, "Read a whole message or mail with memory_original(ref)."])


async def memory_original(access: MemoryAccess, ref: str, offset: int = 0) -> str:
    m = _REF.match(ref)
    if m is None:
        raise ToolError(NOT_VISIBLE)
    if m.group(1):
        seq = parse_id(m.group(1))
        if seq is None:  # a number no record can have: absent, like any other
            raise ToolError(NOT_VISIBLE)
        async with access.db.read() as tx:
            rec = await originals.record(tx, seq)
        if rec is None or is_tombstone(rec.payload) or not access.visibility.sees_scope(rec.scope):
            raise ToolError(NOT_VISIBLE)
        return _page(ref, _record_header(rec, access.tz), rec.text, offset)
    session_id, line = parse_id(m.group(2)), parse_id(m.group(3), most=MAX_INT32)
    if session_id is None or line is None:
        raise ToolError(NOT_VISIBLE)
    async with access.db.read() as tx:
        found = await originals.session_event(tx, session_id, line)
    kinds = MESSAGE_KINDS + (TOOL_KINDS if access.tool_output else ())
    if found is None or found[0].kind not in kinds:
        raise ToolError(NOT_VISIBLE)
    event, task, conversation = found
    if not access.visibility.sees_scope(conversation_scope(conversation)):
        raise ToolError(NOT_VISIBLE)
    when = event.created_at.astimezone(access.tz).strftime("%Y-%m-%d %H:%M")
    header = f"task log of {task.name!r}, {event.kind}, {when}"
    return _page(ref, header, event.text, offset)


async def memory_index_read(access: MemoryAccess, name: str, query: str | None = None) -> str:
    """An index's entries (those containing `query`, when given), with refs to originals."""
    async with access.db.read() as tx:
        index = await memory_indexes.by_name(tx, name.strip())
        visible = index is not None and sees_index(access.visibility, index)
        if index is None or not visible:
            names = [i.name for i in await memory_indexes.all_indexes(tx)
                     if sees_index(access.visibility, i)]  # fmt: skip
            known = ", ".join(names) or "none"
            raise ToolError(f"no index named {name!r} here (indexes here: {known})")
        found = await memory_indexes.entries(
            tx, index.id, contains=(query or "").strip() or None, limit=INDEX_ENTRIES
        )
    state = f"index {index.name!r} ({index.criteria}), covered to rec-{index.covered_cursor}"
    if not found:
        return f"{state}: no entries" + (f" containing {query!r}" if query else "")
    lines = [f"- {e.key}: {e.text} (refs {', '.join(f'rec-{r}' for r in e.refs)})" for e in found]
    return "\n".join([f"{state}:", *lines])


async def _records_of(db: Database, hits: list[SearchHit]) -> dict[str, SourceRecord]:
    """Search document id -> the record it was made from."""
    keys = {}
    for hit in hits:
        prefix = f"source:{hit.source_id}:"
        if hit.source_id and hit.id.startswith(prefix):
            keys[hit.id] = (hit.source_id, hit.id[len(prefix) :])
    if not keys:
        return {}
    async with db.read() as tx:
        stored = await originals.records_by_key(tx, list(keys.values()))
    return {doc: stored[key] for doc, key in keys.items() if key in stored}


def _hit_line(hit: SearchHit, records: dict[str, SourceRecord], tz: tzinfo) -> str | None:
    when = hit.time.astimezone(tz).strftime("%Y-%m-%d %H:%M") if hit.time else "undated"
    excerpt = " … ".join(" ".join(e.split()) for e in hit.excerpts)[:EXCERPT_CHARS]
    rec = records.get(hit.id)
    if rec is not None and (info := attachment_of(rec.payload)) is not None:
        return f"[rec-{rec.id}] {_attachment(rec, info, hit.title)} {when}: {excerpt}"
    if rec is not None:
        what = "mail" if hit.kind == "source_mail" else "chat message"
        where = f"subject {rec.title!r}" if what == "mail" else f"in {hit.title!r}"
        return f"[rec-{rec.id}] {what} {when} from {rec.author or 'unknown'}, {where}: {excerpt}"
    if hit.session_id and hit.id.startswith("session:"):
        seq = hit.id.rsplit(":", 1)[-1]
        role = hit.kind.removeprefix("session_")
        return f"[log-{hit.session_id}-{seq}] task {hit.title!r} {when} ({role}): {excerpt}"
    return None  # a digest or a record deleted since it was indexed: nothing to read


def _attachment(rec: SourceRecord, info: dict[str, Any], title: str | None) -> str:
    """`attachment 'a.pdf' (120 KB, PDF) in <chat>, from <sender>`. A hit's `title` of a
    chat's file says "attachment 'a.pdf' in <chat>" (bot/memory/source_index.py): the chat
    is taken from it; otherwise, and for a mail's file, the record's scope says where."""
    prefix = f"attachment {info.get('name') or rec.title!r} in "
    place = title[len(prefix) :] if title and title.startswith(prefix) else rec.scope
    return f"attachment {described(info, quoted=True)} in {place}, from {rec.author or 'unknown'}"


def _record_header(rec: SourceRecord, tz: tzinfo) -> str:
    when = rec.sent_at.astimezone(tz).strftime("%Y-%m-%d %H:%M") if rec.sent_at else "undated"
    if (info := attachment_of(rec.payload)) is not None:
        return f"{_attachment(rec, info, None)}, {when}"
    if holds_chat_messages(rec.source):
        return f"chat message in {rec.title or rec.scope!r} from {rec.author or 'unknown'}, {when}"
    to = rec.payload.get("to") if isinstance(rec.payload, dict) else None
    header = f"mail from {rec.author or 'unknown'}, {when}, subject {rec.title!r}"
    return header + (f", to {to}" if to else "")


def _page(ref: str, header: str, text: str, offset: int) -> str:
    offset = max(0, offset)
    if offset and offset >= len(text):
        raise ToolError(f"{ref} has only {len(text)} characters")
    part = text[offset : offset + ORIGINAL_CHARS]
    rest = len(text) - offset - len(part)
    more = f"\n({rest} more characters: memory_original({ref!r}, offset={offset + len(part)}))"
    return f"{ref}: {header}\n---\n{part}" + (more if rest > 0 else "")
