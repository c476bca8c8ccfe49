"""The notices the status page lists (the `/why ID` of what the Bot sent on its own): the
newest handled ones, found through their partial index, not by reading every user message
ever received."""

from __future__ import annotations

import importlib.util
from datetime import UTC, datetime, timedelta
from pathlib import Path

from storage.db import Database
from storage.models import HANDLED_NOTICE
from storage.repos import conversations, inbox
from storage.repos.conversations import NewConversation
from tests.statements import statements_of

NOW = datetime(2026, 12, 5, 3, 0, tzinfo=UTC)
MIGRATION = (
    Path(__file__).resolve().parents[2]
    / "storage/migrations/versions/0017_handled_notices_index.py"
)


async def _inbox(db: Database, kinds: list[tuple[str, bool]]) -> list[int]:
    """Items of these (kind, delivered) in one conversation, oldest first: their ids."""
    async with db.write() as tx:
        made = await conversations.get_or_create_many(
            tx, [NewConversation("feishu", "oc_notices", "group")]
        )
        [conversation] = made.values()
        keys = await inbox.append_many(
            tx,
            [
                inbox.NewItem(kind, {}, conversation.id, f"notice-test:{n}", NOW)
                for n, (kind, _) in enumerate(kinds)
            ],
        )
        ids = [keys[f"notice-test:{n}"] for n in range(len(kinds))]
        delivered = [i for i, (_, done) in zip(ids, kinds, strict=True) if done]
        await inbox.mark_delivered(tx, delivered, "batch-notices", NOW + timedelta(seconds=1))
    return ids


async def test_the_newest_handled_notices_come_first_and_user_messages_and_waiting_ones_never(
    db: Database,
) -> None:
    ids = await _inbox(
        db,
        [
            ("delegation_result", True),
            ("user_message", True),
            ("finding", True),
            ("user_message", True),
            ("matter_result", True),
            ("finding", False),  # not handled yet
        ],
    )
    async with db.read() as tx:
        newest_two = await inbox.handled_notices(tx, 2)
        all_of_them = await inbox.handled_notices(tx, 10)
    assert [n.id for n in newest_two] == [ids[4], ids[2]]
    assert [n.id for n in all_of_them] == [ids[4], ids[2], ids[0]]


async def test_on_sqlite_the_notices_are_read_through_their_index_newest_first(
    sqlite_db: Database,
) -> None:
    await _inbox(sqlite_db, [("user_message", True)] * 50 + [("finding", True)])
    with statements_of(sqlite_db, keep=lambda s: s.startswith("SELECT")) as sent:
        async with sqlite_db.read() as tx:
            await inbox.handled_notices(tx, 5)
    [query] = sent
    async with sqlite_db.read() as tx:
        # SQLite's sessions run their statements at once on a synchronous Session
        rows = tx.sync_session.connection().exec_driver_sql(f"EXPLAIN QUERY PLAN {query}", (5, 0))
        plan = [row[-1] for row in rows]
    assert plan == ["SCAN inbox_items USING INDEX ix_inbox_items_handled_notices"], plan


def test_the_migration_says_the_condition_the_models_and_the_query_say() -> None:
    spec = importlib.util.spec_from_file_location("migration_0017", MIGRATION)
    assert spec is not None and spec.loader is not None
    migration = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(migration)
    assert migration._HANDLED_NOTICE == HANDLED_NOTICE
