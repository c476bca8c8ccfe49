"""`memory_search` and `memory_original` on their own: refs lead back to originals, an
original outside what the asker may see reads as absent, long originals come in parts, and
a failed search says so instead of "nothing found"."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

import pytest

from bot.agent.tools import ToolError
from bot.assistant.visibility import NOTHING, Visibility
from bot.memory import recall
from bot.memory.search import SearchService
from bot.memory.source_index import SourceIndexer
from storage.db import Database
from storage.repos import source_records
from storage.repos import sources as source_repo
from storage.repos.source_records import NewRecord
from storage.search import SearchError, SearchHit
from storage.search.embedded import EmbeddedSearchIndex
from storage.types import utcnow

OWNER_SEES_ALL = Visibility(everything=True, conversation_id=1)
GROUP = Visibility(everything=False, conversation_id=2, scopes=frozenset({"group:oc_team"}))


class DownIndex:
    async def search(self, query: str, filters: object = None, limit: int = 10) -> list[SearchHit]:
        raise SearchError("connection refused")


async def stored(db: Database, search: SearchService) -> dict[str, int]:
    """A mail (the owner's) and a group message, stored and indexed; their seqs."""
    now = utcnow()
    records = [
        NewRecord("email:INBOX", "m1", "mail:INBOX", "Budget: " + "预算 " * 3000, now,
                  author="cfo@example.com", title="Budget 2027"),
        NewRecord("feishu:oc_team", "om_1", "group:oc_team", "team budget sync at 3pm", now,
                  author="ou_member", title="Team"),
    ]  # fmt: skip
    async with db.write() as s:
        for r in records:
            kind = r.source.split(":")[0]
            await source_repo.ensure(s, name=r.source, kind=kind, scope=r.scope, title=r.title,
                                     now=now)  # fmt: skip
        await source_records.insert_records(s, records, now)
    async with db.read() as s:
        rows = await source_records.records_after(s, 0, 10)
    assert await SourceIndexer(db, search).index(rows)
    return {r.source: r.id for r in rows}


@pytest.fixture
async def search(tmp_path: Path) -> SearchService:
    return SearchService(EmbeddedSearchIndex(tmp_path / "index"))


def access(db: Database, search: SearchService, visibility: Visibility) -> recall.MemoryAccess:
    return recall.MemoryAccess(db=db, search=search, visibility=visibility, tz=UTC)


async def test_a_hit_leads_back_to_its_original_in_parts(
    db: Database, search: SearchService
) -> None:
    seqs = await stored(db, search)
    found = await recall.memory_search(access(db, search, OWNER_SEES_ALL), "budget")
    assert f"[rec-{seqs['email:INBOX']}] mail" in found and "cfo@example.com" in found
    assert f"[rec-{seqs['feishu:oc_team']}] chat message" in found

    ref = f"rec-{seqs['email:INBOX']}"
    first = await recall.memory_original(access(db, search, OWNER_SEES_ALL), ref)
    assert "subject 'Budget 2027'" in first and "Budget: 预算" in first
    assert f"memory_original('{ref}', offset={recall.ORIGINAL_CHARS})" in first
    last = await recall.memory_original(access(db, search, OWNER_SEES_ALL), ref, offset=9000)
    assert "more characters" not in last and last.rstrip().endswith("预算")
    with pytest.raises(ToolError, match="has only"):
        await recall.memory_original(access(db, search, OWNER_SEES_ALL), ref, offset=10**6)


async def test_what_the_asker_may_not_see_reads_as_absent(
    db: Database, search: SearchService
) -> None:
    seqs = await stored(db, search)
    in_group = access(db, search, GROUP)
    found = await recall.memory_search(in_group, "budget")
    assert f"rec-{seqs['feishu:oc_team']}" in found and "cfo@example.com" not in found
    mail = f"rec-{seqs['email:INBOX']}"
    errors = []
    for ref in (mail, "rec-999999", "log-1-1", "source:email:INBOX:m1", "rec-1; drop"):
        with pytest.raises(ToolError) as caught:
            await recall.memory_original(in_group, ref)
        errors.append(str(caught.value))
    assert len(set(errors)) == 1 and errors[0] == recall.NOT_VISIBLE  # absent and hidden alike
    nowhere = access(db, search, NOTHING)
    assert (await recall.memory_search(nowhere, "budget")).startswith("nothing found")


async def test_a_failed_search_is_not_nothing_found(db: Database) -> None:
    broken = access(db, SearchService(DownIndex()), OWNER_SEES_ALL)  # type: ignore[arg-type]
    said = await recall.memory_search(broken, "budget")
    assert "unavailable" in said and "nothing found" not in said
    with pytest.raises(ToolError, match="query is empty"):
        await recall.memory_search(broken, "  ")


ARABIC_INDIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")


async def test_a_ref_no_row_can_have_or_written_in_lookalike_digits_reads_as_absent(
    db: Database, search: SearchService
) -> None:
    seqs = await stored(db, search)
    owner = access(db, search, OWNER_SEES_ALL)
    mail = str(seqs["email:INBOX"])
    assert "Budget 2027" in await recall.memory_original(owner, f"rec-{mail}")
    huge = "9" * 23
    for ref in (f"rec-{mail.translate(ARABIC_INDIC)}", f"rec-{huge}", "rec-0",
                f"log-{huge}-1", "log-1-9999999999", f"rec-{'9' * 5000}"):  # fmt: skip
        with pytest.raises(ToolError) as caught:
            await recall.memory_original(owner, ref)
        assert str(caught.value) == recall.NOT_VISIBLE, ref
