"""What a turn reads of its conversation's waiting items: each with whether its sender is an
admin added by command, in the same query."""

from __future__ import annotations

from datetime import UTC, datetime

from storage.db import Database
from storage.repos import admins, conversations, inbox
from storage.repos.conversations import NewConversation

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


async def test_each_waiting_item_says_whether_its_sender_is_a_listed_admin(db: Database) -> None:
    async with db.write() as tx:
        chat = (
            await conversations.get_or_create_many(tx, [NewConversation("feishu", "oc_g", "group")])
        )[("feishu", "oc_g")]
        await admins.add(tx, "ou_admin", added_by="ou_owner", now=NOW)
        for kind, payload in [
            ("user_message", {"sender_id": "ou_admin", "text": "from an admin"}),
            ("user_message", {"sender_id": "ou_stranger", "text": "from anyone"}),
            ("finding", {"text": "a notice has no sender"}),
        ]:
            await inbox.append(
                tx, kind=kind, payload=payload, conversation_id=chat.id, created_at=NOW
            )

    async with db.read() as tx:
        pending = await inbox.pending_for_conversation(tx, chat.id)
    assert [(p.kind, p.listed_admin) for p in pending] == [
        ("user_message", True),
        ("user_message", False),
        ("finding", False),
    ]

    async with db.write() as tx:  # removed by command: the next read says so
        await admins.remove(tx, "ou_admin")
    async with db.read() as tx:
        assert [p.listed_admin for p in await inbox.pending_for_conversation(tx, chat.id)] == [
            False,
            False,
            False,
        ]


async def test_a_batch_holds_one_thread_and_the_rest_waits_for_the_next_turn(
    db: Database,
) -> None:
    """A thread in a chat is its own context: the chat's messages and another thread's are
    not batched with it, and are the next turns' (oldest first)."""
    async with db.write() as tx:
        chat = (
            await conversations.get_or_create_many(tx, [NewConversation("feishu", "oc_g", "group")])
        )[("feishu", "oc_g")]
        for text, thread in [
            ("main 1", None),
            ("thread A 1", "omt_a"),
            ("thread B 1", "omt_b"),
            ("main 2", None),
            ("thread A 2", "omt_a"),
        ]:
            payload = {"sender_id": "ou_member", "text": text, "thread_id": thread}
            await inbox.append(
                tx, kind="user_message", payload=payload, conversation_id=chat.id, created_at=NOW
            )

    batches: list[list[str]] = []
    for _ in range(3):
        async with db.write() as tx:
            batch = await inbox.pending_for_conversation(tx, chat.id)
            batches.append([p.payload["text"] for p in batch])
            await inbox.mark_delivered(tx, [p.id for p in batch], "turn", NOW)
    assert batches == [["main 1", "main 2"], ["thread A 1", "thread A 2"], ["thread B 1"]]
    async with db.read() as tx:
        assert await inbox.pending_for_conversation(tx, chat.id) == []
