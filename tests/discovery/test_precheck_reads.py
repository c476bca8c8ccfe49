"""The discovery pre-check runs on every due heartbeat, so none of its reads may walk a table
that grows: each statement it runs is planned as an index read on both databases."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

from sqlalchemy import event, insert

from bot.discovery.heartbeat import pre_check
from storage.db import Database
from storage.models import DiscoveryRound, Finding, IndexEntry, MemoryIndex, NotebookNote
from storage.repos import discovery
from tests.discovery.support import DEFAULTS

NOW = datetime(2026, 12, 6, 9, tzinfo=UTC)


async def _some_history(db: Database) -> None:
    async with db.write() as tx:
        index_id = await tx.scalar(
            insert(MemoryIndex).values(name="people", criteria="who is who", created_at=NOW)
            .returning(MemoryIndex.id)
        )  # fmt: skip
        await tx.execute(
            insert(IndexEntry),
            [
                {"index_id": index_id, "key": f"k{i}", "text": "t", "updated_at": NOW}
                for i in range(50)
            ],
        )
        await tx.execute(
            insert(NotebookNote),
            [
                {
                    "author": "discovery",
                    "kind": "situation",
                    "text": f"note {i}",
                    "due_on": date(2026, 12, 1) + timedelta(days=i % 40),
                    "created_at": NOW,
                }
                for i in range(50)
            ],
        )


async def _statements_of_a_pre_check(db: Database) -> list[tuple[str, Any]]:
    seen: list[tuple[str, Any]] = []

    def record(conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
        seen.append((statement, params))

    event.listen(db.session_engine, "before_cursor_execute", record)
    try:
        await pre_check(db, discovery.state_of(DEFAULTS, NOW), NOW, UTC)
    finally:
        event.remove(db.session_engine, "before_cursor_execute", record)
    return [(s, p) for s, p in seen if s.lstrip().upper().startswith("SELECT")]


async def _plan(db: Database, statement: str, params: Any) -> str:
    if db.dialect == "postgresql":
        async with db.write() as tx:  # a transaction, for SET LOCAL; it writes nothing
            conn = await tx.connection()
            # Small tables here: make a full scan dear, as it is with a long history; the
            # point is that an index CAN serve each read.
            await conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
            rows = await conn.exec_driver_sql(f"EXPLAIN {statement}", params)
            return "\n".join(str(r[0]) for r in rows)
    # SQLite's sessions run on the loop's thread on a plain Engine (storage/sqlite_inline.py)
    with db.session_engine.connect() as sync_conn:
        found = sync_conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", params)
        return "\n".join(str(r[-1]) for r in found)


async def test_every_read_of_the_pre_check_is_an_index_read(db: Database) -> None:
    await _some_history(db)
    statements = await _statements_of_a_pre_check(db)
    assert len(statements) >= 6, statements  # records, entries, notes, feedback, matters, ...
    for statement, params in statements:
        plan = await _plan(db, statement, params)
        assert "Seq Scan" not in plan, f"{statement}\n{plan}"
        assert not any(
            line.startswith("SCAN ") and "COVERING INDEX" not in line and " USING INDEX" not in line
            for line in plan.splitlines()
        ), f"{statement}\n{plan}"


async def test_new_feedback_changes_the_pre_check_signal(db: Database) -> None:
    async def feedback_signal() -> int:
        async with db.read() as tx:
            return int(
                (await discovery.signals(tx, NOW, NOW.date(), timedelta(days=2)))["feedback"]
            )

    before = await feedback_signal()
    async with db.write() as tx:
        round_id = await tx.scalar(
            insert(DiscoveryRound).values(phase="done", started_at=NOW).returning(DiscoveryRound.id)
        )
        finding_id = await tx.scalar(
            insert(Finding).values(round_id=round_id, ordinal=1, text="f", status="sent")
            .returning(Finding.id)
        )  # fmt: skip
        assert await discovery.add_feedback(
            tx, finding_id=finding_id, kind="reply", source="om_1", text="thanks", now=NOW
        )
    assert await feedback_signal() != before
