"""`maka tokenize TEXT`, `maka search QUERY [--session ID ...] [--json]`, `maka search rebuild`."""

from __future__ import annotations

import json
from dataclasses import asdict

from bot.config import Settings
from bot.memory.search import SearchService, open_index
from bot.memory.session_index import SessionIndexer
from bot.sources.index import SourceIndexer
from storage.db import create_database
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


async def run_rebuild(settings: Settings) -> int:
    db = create_database(settings.resolved_database_url)
    try:
        await db.reach()
    except BaseException:
        await db.dispose()
        raise
    search = SearchService(open_index(settings))
    try:
        await search.index.clear()
        count = await SessionIndexer(db, search, tool_output=settings.index_tool_output).rebuild()
        records = await SourceIndexer(db, search).rebuild()
    except (SearchError, RuntimeError) as exc:
        print(f"rebuild failed: {exc}")
        return 1
    finally:
        await search.close()
        await db.dispose()
    print(f"indexed {count} session messages and {records} source records")
    return 0
