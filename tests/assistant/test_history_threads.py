"""The history a turn is shown when a chat has threads (bot/assistant/history.py): its own
thread's earlier turns in the window, one summary per conversation folded as a prefix of the
log, and never more than MAX_UNFOLDED turns of all threads left unfolded."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.assistant import history
from storage.db import Database
from storage.repos import conversations, sessions
from storage.repos.conversations import NewConversation

NOW = datetime(2026, 12, 6, 9, 0, tzinfo=UTC)


async def _log(db: Database, turns: list[tuple[str | None, str]]) -> int:
    """A conversation whose Bot logged these turns (thread, what the user said)."""
    async with db.write() as tx:
        chat = (
            await conversations.get_or_create_many(tx, [NewConversation("feishu", "oc_g", "group")])
        )[("feishu", "oc_g")]
        session_id = (await sessions.new_coordinations(tx, [(chat.id, "feishu:oc_g")], NOW))[
            chat.id
        ]
        for thread, said in turns:
            meta: dict[str, object] = {"inbox_items": []}
            if thread is not None:
                meta["thread"] = thread
            events = [("user", said, meta), ("assistant", f"re {said}", None)]
            await sessions.log_each(tx, [(session_id, events)], NOW)
    return session_id


async def _window(
    db: Database, session_id: int, thread: str | None, budget: int
) -> history.Context:
    async with db.read() as tx:
        return await history.load_context(tx, session_id, budget, thread=thread)


async def test_a_thread_turn_sees_its_own_thread_and_folds_only_up_to_what_did_not_fit(
    db: Database,
) -> None:
    turns = [(None, "main 1"), ("omt_a", "alpha 1"), (None, "main 2"), ("omt_a", "alpha 2")]
    session_id = await _log(db, turns)

    roomy = await _window(db, session_id, "omt_a", 10_000)
    assert [t.user for t in roomy.window] == ["alpha 1", "alpha 2"]
    assert roomy.new_summary is None  # everything of the thread fit: nothing folded

    main = await _window(db, session_id, None, 10_000)
    assert [t.user for t in main.window] == ["main 1", "main 2"]

    # Room for one turn: "alpha 1" is folded, and with it everything logged before it.
    one = history.PastTurn(0, NOW, "alpha 2", "re alpha 2").tokens
    tight = await _window(db, session_id, "omt_a", one)
    assert [t.user for t in tight.window] == ["alpha 2"]
    assert tight.new_summary is not None
    text, _covered = tight.new_summary
    assert "main 1" in text and "alpha 1" in text and "main 2" not in text


async def test_many_threads_never_leave_more_than_max_unfolded_turns_unfolded(
    db: Database,
) -> None:
    count = history.MAX_UNFOLDED + 5
    session_id = await _log(db, [(f"omt_{i}", f"thread {i} says hi") for i in range(count)])

    context = await _window(db, session_id, None, 100_000)  # the chat: none of its own

    assert context.window == []
    assert context.new_summary is not None
    async with db.read() as tx:
        _, events = await sessions.since_summary(tx, session_id, ("user", "assistant"))
    text, covered = context.new_summary
    assert "thread 4 says hi" in text and "thread 5 says hi" not in text
    assert len([e for e in events if e.seq > covered and e.kind == "user"]) == history.MAX_UNFOLDED
