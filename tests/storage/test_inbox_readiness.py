"""Which conversations the Bot may take a turn for: those whose burst window has closed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from storage.db import Database
from storage.repos import conversations, inbox
from storage.repos.conversations import NewConversation

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
WINDOW = inbox.Readiness(now=NOW, debounce=timedelta(seconds=1), longest=timedelta(seconds=10))


async def _chats(db: Database, *names: str) -> dict[str, int]:
    wanted = [NewConversation("feishu", name, "p2p") for name in names]
    async with db.write() as tx:
        made = await conversations.get_or_create_many(tx, wanted)
    return {chat_id: c.id for (_, chat_id), c in made.items()}


async def _say(db: Database, conversation_id: int, seconds_ago: float) -> int:
    async with db.write() as tx:
        item = await inbox.append(
            tx,
            kind="message",
            payload={},
            conversation_id=conversation_id,
            created_at=NOW - timedelta(seconds=seconds_ago),
        )
    assert item is not None
    return item


async def _ready(db: Database, *, skip: tuple[int, ...] = (), limit: int = 10) -> list[int]:
    async with db.read() as tx:
        return await inbox.ready_conversations(tx, WINDOW, skip=skip, limit=limit)


async def test_a_conversation_is_ready_once_its_burst_is_quiet_or_has_waited_too_long(
    db: Database,
) -> None:
    chat = await _chats(db, "quiet", "typing", "long_burst", "answered")
    await _say(db, chat["quiet"], 5)
    await _say(db, chat["quiet"], 2)  # its last word 2 s ago: the 1 s window has closed
    await _say(db, chat["typing"], 3)
    await _say(db, chat["typing"], 0.5)  # still writing: its window is open
    await _say(db, chat["long_burst"], 12)  # writing for 12 s, past the 10 s longest wait
    await _say(db, chat["long_burst"], 0.2)
    delivered = await _say(db, chat["answered"], 30)
    async with db.write() as tx:
        await inbox.mark_delivered(tx, [delivered], "batch-1", NOW)

    # The one whose input came first first; a delivered item makes nothing ready.
    assert await _ready(db) == [chat["quiet"], chat["long_burst"]]
    async with db.read() as tx:
        gathering_until = await inbox.next_ready_at(tx, WINDOW, skip=())
    assert gathering_until == NOW + timedelta(seconds=0.5)  # "typing", 1 s after its last word


async def test_the_claim_takes_the_oldest_ready_conversations_up_to_its_limit_and_skips_held_ones(
    db: Database,
) -> None:
    chat = await _chats(db, "first", "second", "third", "fourth")
    for seconds_ago, name in ((9, "first"), (8, "second"), (7, "third"), (6, "fourth")):
        await _say(db, chat[name], seconds_ago)
    await _say(db, chat["first"], 2)  # a later word in the first chat does not move it back

    assert await _ready(db, limit=2) == [chat["first"], chat["second"]]
    held = (chat["first"], chat["third"])  # turns running for these, here or on a replica
    assert await _ready(db, skip=held) == [chat["second"], chat["fourth"]]

    async with db.write() as tx:  # the first chat answered: its waiting items delivered
        pending = await inbox.pending_for_conversation(tx, chat["first"])
        await inbox.mark_delivered(tx, [p.id for p in pending], "batch-2", NOW)
    assert await _ready(db) == [chat["second"], chat["third"], chat["fourth"]]


async def test_on_postgresql_the_claim_is_one_pass_over_the_waiting_items_whatever_the_statistics(
    db: Database,
) -> None:
    """Statistics from a quiet moment (nothing waiting), then a backlog: the walk's plan then
    scanned every waiting item once per waiting item (1.5 s of the server's CPU a claim with
    3,000 waiting). The claim PostgreSQL runs has no per-item loop to choose."""
    if db.dialect != "postgresql":
        pytest.skip("SQLite plans by its indexes alone (its walk: test_sqlite_inline.py)")
    from storage.repos.inbox import _READY_GROUPED

    async with db.engine.connect() as conn:
        await conn.execute(text("ANALYZE inbox_items"))
    chat = await _chats(db, *(f"backlog_{i}" for i in range(300)))
    async with db.write() as tx:
        await inbox.append_many(
            tx,
            [
                inbox.NewItem("message", {}, cid, f"backlog:{cid}", NOW - timedelta(seconds=20))
                for cid in sorted(chat.values())
            ],
        )

    query = _READY_GROUPED.params(**WINDOW.bound([0]), limit=16).compile(
        dialect=db.engine.dialect, compile_kwargs={"literal_binds": True}
    )
    async with db.read() as tx:
        plan = "\n".join(row[0] for row in await tx.execute(text(f"EXPLAIN {query}")))
    assert "Nested Loop" not in plan and "SubPlan" not in plan, plan
    assert "Aggregate" in plan, plan
    assert await _ready(db, limit=3) == sorted(chat.values())[:3]


async def test_an_item_in_backoff_makes_nothing_ready_until_due_and_later_input_goes_past_it(
    db: Database,
) -> None:
    chat = await _chats(db, "poisoned")
    poison = await _say(db, chat["poisoned"], 5)
    async with db.write() as tx:  # its turn failed: tried again in 30 s
        [failed] = await inbox.record_failures(
            tx, [poison], error="OverflowError", now=NOW,
            retry_in=lambda _attempts: timedelta(seconds=30), park_after=3,
        )  # fmt: skip
    assert failed.attempts == 1 and not failed.parked
    assert await _ready(db) == []
    async with db.read() as tx:
        assert await inbox.next_ready_at(tx, WINDOW, skip=()) == NOW + timedelta(seconds=30)

    later = await _say(db, chat["poisoned"], 2)  # the next message: answered meanwhile
    assert await _ready(db) == [chat["poisoned"]]
    async with db.read() as tx:
        assert [
            p.id for p in await inbox.pending_for_conversation(tx, chat["poisoned"], now=NOW)
        ] == [later]
        due = NOW + timedelta(seconds=31)  # once due, the failed item is tried on its own
        assert [
            p.id for p in await inbox.pending_for_conversation(tx, chat["poisoned"], now=due)
        ] == [poison]
