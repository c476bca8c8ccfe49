"""The senders' claim: straight to the write while rows keep coming, a read first once
nothing more was due (on SQLite a claim's write takes the one write lock)."""

from __future__ import annotations

from bot.channels.outbox_sender import Claimed, OutboxSender
from storage.db import Database
from storage.types import utcnow
from tests.seed import pending_reply
from tests.statements import statements_of


class _Sender(OutboxSender):
    platform = "feishu"

    async def deliver(self, row: Claimed) -> None:  # pragma: no cover - never delivers here
        raise AssertionError("not delivered in these tests")


async def _due(db: Database, *chats: str) -> None:
    async with db.write() as tx:
        for chat in chats:
            await pending_reply(tx, chat, utcnow())


def _claims(statements: list[str]) -> list[str]:
    return [s for s in statements if s.startswith("UPDATE outbox SET attempts")]


async def test_a_claim_after_one_that_found_fewer_than_asked_only_reads(db: Database) -> None:
    await _due(db, "oc_1")
    sender = _Sender(db, "host-a")
    assert [row.chat_id for row in await sender.claim(4)] == ["oc_1"]
    with statements_of(db) as statements:
        assert await sender.claim(4) == []  # a freed slot's claim, with nothing due
    assert _claims(statements) == [], statements
    assert any(s.startswith("SELECT") for s in statements), statements


async def test_a_claim_after_one_that_filled_its_slots_goes_straight_to_the_write(
    db: Database,
) -> None:
    await _due(db, "oc_1", "oc_2")
    sender = _Sender(db, "host-a")
    [first] = await sender.claim(1)
    with statements_of(db) as statements:
        [second] = await sender.claim(1)
    assert {first.chat_id, second.chat_id} == {"oc_1", "oc_2"}
    assert len(_claims(statements)) == 1
    assert not [s for s in statements if s.startswith("SELECT")], statements
