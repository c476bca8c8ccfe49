"""What a Bot turn reads of its conversation's log: the latest summary and the turns after what
it covers, in one statement."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from storage.db import Database
from storage.repos import sessions
from storage.repos.conversations import NewConversation, get_or_create_many

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
TURNS = ("user", "assistant")


async def _coordination(db: Database, chat_id: str = "oc_history") -> int:
    async with db.write() as tx:
        made = await get_or_create_many(tx, [NewConversation("feishu", chat_id, "p2p")])
        conversation = made[("feishu", chat_id)]
        made_sessions = await sessions.new_coordinations(tx, [(conversation.id, chat_id)], NOW)
        return made_sessions[conversation.id]


async def _log(db: Database, session_id: int, *events: tuple[str, str, Any]) -> None:
    async with db.write() as tx:
        await sessions.append_events(tx, session_id, list(events), NOW)


async def _since_summary(db: Database, session_id: int) -> tuple[str | None, list[int]]:
    async with db.read() as tx:
        summary, events = await sessions.since_summary(tx, session_id, TURNS)
    return (summary.text if summary else None), [event.seq for event in events]


async def test_without_a_summary_every_turn_is_read(db: Database) -> None:
    session_id = await _coordination(db)
    assert await _since_summary(db, session_id) == (None, [])
    await _log(db, session_id, ("user", "hi", None), ("assistant", "hello", None))
    await _log(db, session_id, ("status", "not a turn", None), ("user", "again", None))

    assert await _since_summary(db, session_id) == (None, [1, 2, 4])


async def test_the_latest_summary_and_only_the_turns_after_what_it_covers(db: Database) -> None:
    session_id = await _coordination(db)
    await _log(db, session_id, ("user", "u1", None), ("assistant", "a1", None))  # 1, 2
    await _log(db, session_id, ("user", "u2", None), ("assistant", "a2", None))  # 3, 4
    # Folds the first turn; the second stays in the window, logged before this summary.
    await _log(
        db,
        session_id,
        ("summary", "first summary", {"covered_seq": 2}),  # 5
        ("user", "u3", None),
        ("assistant", "a3", None),
    )
    assert await _since_summary(db, session_id) == ("first summary", [3, 4, 6, 7])

    # A newer summary folds only the second turn: the older summary (seq 5) lies in the range
    # it leaves, and must not be taken for the latest.
    await _log(
        db,
        session_id,
        ("summary", "second summary", {"covered_seq": 4}),  # 8
        ("user", "u4", None),
        ("assistant", "a4", None),
    )
    assert await _since_summary(db, session_id) == ("second summary", [6, 7, 9, 10])


async def test_a_summary_that_says_nothing_of_what_it_covers_covers_nothing(
    db: Database,
) -> None:
    session_id = await _coordination(db)
    await _log(db, session_id, ("user", "u1", None), ("assistant", "a1", None))
    await _log(db, session_id, ("summary", "no payload", None))

    assert await _since_summary(db, session_id) == ("no payload", [1, 2])


async def test_another_sessions_summary_does_not_cut_this_ones_turns(db: Database) -> None:
    session_id = await _coordination(db)
    other = await _coordination(db, "oc_other")
    await _log(db, session_id, ("user", "u1", None), ("assistant", "a1", None))
    await _log(db, other, ("summary", "elsewhere", {"covered_seq": 50}))

    assert await _since_summary(db, session_id) == (None, [1, 2])
