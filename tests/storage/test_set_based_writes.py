"""The set-based writes a group of Bot turns and deliveries runs with (several conversations'
parts in one statement, `storage.db.Together`) say what the one-at-a-time forms say, on both
databases, with several rows each: a multi-row statement binds every row's values (one of
them, bound twice in a row, once went unsent on PostgreSQL and failed every group)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from storage.db import Database
from storage.models import Conversation, ModelCall, OutboxMessage, Session
from storage.repos import conversations, inbox, model_calls, outbox, sessions
from storage.repos.conversations import NewConversation

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


async def _chats(db: Database, n: int) -> list[int]:
    wanted = [NewConversation("feishu", f"oc_{i}", "p2p", f"ou_{i}") for i in range(n)]
    async with db.write() as tx:
        made = await conversations.get_or_create_many(tx, wanted)
    return [made[("feishu", f"oc_{i}")].id for i in range(n)]


def _reply(conversation_id: int, key: str) -> dict[str, object]:
    return {
        "idempotency_key": key,
        "platform": "feishu",
        "chat_id": f"oc_{key}",
        "conversation_id": conversation_id,
        "content_type": "text",
        "content": {"text": f"pong {key}"},
        "reply_to": None,
        "in_thread": False,
    }


async def test_several_turns_start_reading_their_conversations_and_waiting_items_at_once(
    db: Database,
) -> None:
    a, b, c = await _chats(db, 3)
    async with db.write() as tx:
        for conversation_id, count in ((a, 3), (b, 1)):
            for n in range(count):
                await inbox.append(
                    tx,
                    kind="user_message",
                    payload={"sender_id": "ou_x", "text": f"{conversation_id}-{n}"},
                    conversation_id=conversation_id,
                    created_at=NOW,
                )
        made = await sessions.new_coordinations(tx, [(a, "feishu:oc_0"), (b, "feishu:oc_1")], NOW)
    async with db.read() as tx:
        found = await conversations.for_turns(tx, [a, b, c, 999])
        waiting = await inbox.pending_for_conversations(tx, [a, b, c], limit=2)
        links = select(Conversation.id, Conversation.coordination_session_id)
        pointed = dict((await tx.execute(links)).all())
        named = dict((await tx.execute(select(Session.id, Session.name))).all())

    assert sorted(found) == sorted([a, b, c]), "a conversation that is not there is left out"
    assert found[a].chat_id == "oc_0" and found[c].peer_open_id == "ou_2"
    assert {k: [p.payload["text"] for p in v] for k, v in waiting.items()} == {
        a: [f"{a}-0", f"{a}-1"],  # the first `limit` of each, oldest first
        b: [f"{b}-0"],
    }
    assert pointed == {a: made[a], b: made[b], c: None}
    assert named[made[a]] == "feishu:oc_0" and named[made[b]] == "feishu:oc_1"


async def test_several_turns_replies_and_ends_are_written_at_once(db: Database) -> None:
    a, b = await _chats(db, 2)
    async with db.write() as tx:
        before = await outbox.enqueue_all(tx, [_reply(a, "k-old")], NOW)
        items = [
            await inbox.append(
                tx, kind="user_message", payload={}, conversation_id=conv, created_at=NOW
            )
            for conv in (a, a, b)
        ]
        made = await sessions.new_coordinations(tx, [(a, "a"), (b, "b")], NOW)
    first, second, third = (item for item in items if item is not None)
    async with db.write() as tx:
        written = await outbox.enqueue_all(
            tx, [_reply(a, "k-1"), _reply(a, "k-old"), _reply(b, "k-2")], NOW
        )
        await inbox.mark_delivered_each(tx, [([first, second], "turn-a"), ([third], "turn-b")], NOW)
        await sessions.log_each(
            tx,
            [
                (made[a], [("user", "ping", None), ("assistant", "pong", None)]),
                (made[b], [("user", "hi", None)]),
            ],
            NOW,
        )
        await model_calls.insert_all(
            tx,
            [
                ModelCall(
                    purpose="bot_turn",
                    model="m",
                    input_tokens=1,
                    output_tokens=1,
                    latency_ms=0,
                    error=None,
                    created_at=NOW,
                )
                for _ in range(3)
            ],
        )
    async with db.read() as tx:
        rows = (await tx.execute(select(OutboxMessage.idempotency_key, OutboxMessage.id))).all()
        left = await inbox.pending_for_conversations(tx, [a, b])
        logged_a = await sessions.events_after(tx, made[a], 0, ("user", "assistant"))
        logged_b = await sessions.events_after(tx, made[b], 0, ("user", "assistant"))
        calls = await model_calls.usage_since(tx, NOW - timedelta(seconds=1))

    assert set(written) == {"k-1", "k-2"}, "a key written before is not written again"
    assert dict(rows) == {"k-old": before["k-old"], **written}
    assert left == {}, "every batch marked delivered"
    assert [(e.seq, e.text) for e in logged_a] == [(1, "ping"), (2, "pong")]
    assert [(e.seq, e.text) for e in logged_b] == [(1, "hi")]
    assert calls.calls == 3


async def test_several_deliveries_settle_at_once_and_a_lost_claim_is_told(db: Database) -> None:
    (a,) = await _chats(db, 1)
    async with db.write() as tx:
        await outbox.enqueue_all(tx, [_reply(a, f"k-{n}") for n in range(3)], NOW)
    async with db.write() as tx:
        claimed = await outbox.claim_due(
            tx, platform="feishu", owner="me", now=NOW, limit=3, lease=timedelta(minutes=1)
        )
    sent, failed, lost = (row.id for row in sorted(claimed, key=lambda r: r.id))
    async with db.write() as tx:  # another sender took one over
        row = await tx.get(OutboxMessage, lost)
        assert row is not None
        row.lease_owner = "other"
    async with db.write() as tx:
        held = await outbox.finish_each(
            tx,
            [
                outbox.Settling(sent, "me", outbox.SENT, platform_message_ids=["om_1"]),
                outbox.Settling(failed, "me", outbox.FAILED, "refused"),
                outbox.Settling(lost, "me", outbox.SENT, platform_message_ids=["om_3"]),
            ],
            NOW,
        )
    async with db.read() as tx:
        states = {
            r.id: (r.state, r.platform_message_ids, r.last_error, r.lease_owner)
            for r in (await tx.scalars(select(OutboxMessage))).all()
        }

    assert held == [True, True, False]
    assert states[sent] == (outbox.SENT, ["om_1"], None, None)
    assert states[failed] == (outbox.FAILED, None, "refused", None)
    assert states[lost] == (outbox.PENDING, None, None, "other"), "the other sender's to settle"
