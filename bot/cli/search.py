"""`maka tokenize TEXT`, `maka search QUERY [--session ID ...] [--json]`, `maka search rebuild`.

A rebuild clears the index, then writes every document again from the database: Session
messages, source records and the per-Session digests. It may run beside a service whose
followers keep indexing (the same documents, by the same ids), and nothing is lost: a
follower indexes only committed rows, so what it wrote before the clear is in the database
before the rebuild reads and is written again; a row that commits after the rebuild read past
its id is still ahead of the follower's checkpoint, so the follower writes it. (The embedded
index takes one writer at a time: stop a service that runs on it first.)
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from bot.cli.database import open_database
from bot.config import Settings
from bot.memory.search import SearchService, open_index
from bot.memory.session_index import SessionIndexer
from bot.memory.source_index import SourceIndexer
from bot.workhub.summaries import rebuild_digests
from storage.db import Database
from storage.search import SearchError, SearchFilters
from storage.search.tokenizer import configure_tokenizer, tokenize


def run_tokenize(settings: Settings, text: str) -> int:
    configure_tokenizer(settings.data_dir / "cache")
    print(" ".join(tokenize(text)))
    return 0


async def run_search(
    settings: Settings, query: str, sessions: list[str] | None, as_json: bool, limit: int
) -> int:
    index = open_index(settings)
    try:
        filters = SearchFilters(session_ids=sessions) if sessions else None
        try:
            hits = await index.search(query, filters, limit)
        except SearchError as exc:  # operators want the real error, not "no evidence"
            print(f"search failed: {exc}")
            return 1
    finally:
        await index.close()
    if as_json:
        print(json.dumps([asdict(h) for h in hits], ensure_ascii=False, default=str, indent=2))
        return 0
    if not hits:
        print("no hits")
    for hit in hits:
        when = f"{hit.time:%Y-%m-%d %H:%M}" if hit.time else "-"
        excerpt = hit.excerpts[0] if hit.excerpts else ""
        print(
            f"{hit.score:.3f}  session={hit.session_id or '-'}  {hit.kind}  {when}  "
            f"{hit.title}: {excerpt}"
        )
    return 0


@dataclass(frozen=True)
class Rebuilt:
    session_messages: int
    source_records: int
    digests: int


async def rebuild(db: Database, search: SearchService, *, tool_output: bool) -> Rebuilt:
    """Clear the index and write everything again (see the module docstring)."""
    await search.index.clear()
    return Rebuilt(
        session_messages=await SessionIndexer(db, search, tool_output=tool_output).rebuild(),
        source_records=await SourceIndexer(db, search).rebuild(),
        digests=await rebuild_digests(db, search),
    )


async def run_rebuild(settings: Settings) -> int:
    db = await open_database(settings, read_only=True)  # it rewrites the index, not the database
    search = SearchService(open_index(settings))
    try:
        done = await rebuild(db, search, tool_output=settings.index_tool_output)
    except (SearchError, RuntimeError) as exc:
        print(f"rebuild failed: {exc}")
        return 1
    finally:
        await search.close()
        await db.dispose()
    print(
        f"indexed {done.session_messages} session messages, {done.source_records} source "
        f"records and {done.digests} Session digests"
    )
    return 0
