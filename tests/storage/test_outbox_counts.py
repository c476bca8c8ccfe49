"""What `/status` and the status page count in the outbox: the replies still owed, read by
the state index, never the sent ones (every reply ever written)."""

from __future__ import annotations

from sqlalchemy import update

from storage.db import Database
from storage.models import OutboxMessage
from storage.repos import outbox
from storage.types import utcnow
from tests.seed import pending_reply
from tests.statements import statements_of


async def _replies_in_states(db: Database, *states: str) -> None:
    now = utcnow()
    async with db.write() as s:
        for n, state in enumerate(states):
            row_id = await pending_reply(s, f"oc_count_{n}", now)
            await s.execute(
                update(OutboxMessage).where(OutboxMessage.id == row_id).values(state=state)
            )


async def test_the_replies_still_owed_are_counted_by_state_and_sent_ones_are_not(
    db: Database,
) -> None:
    await _replies_in_states(
        db, "sent", "sent", "sent", "pending", "pending", "failed", "uncertain"
    )
    async with db.read() as tx:
        counts = await outbox.count_unfinished(tx)
    assert counts == {"pending": 2, "failed": 1, "uncertain": 1}


async def test_on_sqlite_the_count_searches_the_state_index_instead_of_scanning_the_outbox(
    sqlite_db: Database,
) -> None:
    await _replies_in_states(sqlite_db, "sent", "pending")
    with statements_of(sqlite_db, keep=lambda s: "count(" in s.lower()) as sent:
        async with sqlite_db.read() as tx:
            await outbox.count_unfinished(tx)
    [query] = sent
    async with sqlite_db.read() as tx:
        # SQLite's sessions run their statements at once on a synchronous Session
        conn = tx.sync_session.connection()
        rows = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {query}", outbox.UNFINISHED)
        plan = [row[-1] for row in rows]
    assert plan == ["SEARCH outbox USING COVERING INDEX ix_outbox_state_due (state=?)"], plan
