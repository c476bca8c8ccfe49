"""The senders' claim: straight to the write while rows keep coming, a read first once
nothing more was due (on SQLite a claim's write takes the one write lock)."""

from __future__ import annotations

from sqlalchemy import select, update

from bot.channels.outbox_sender import MAX_CLAIMS, Claimed, OutboxSender
from storage.db import Database
from storage.models import OutboxMessage
from storage.repos import outbox
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


class _Raising(OutboxSender):
    platform = "feishu"
    calls = 0

    async def deliver(self, row: Claimed) -> None:
        self.calls += 1
        raise OverflowError("value out of int64 range")


async def _row(db: Database) -> OutboxMessage:
    async with db.read() as tx:
        [row] = (await tx.scalars(select(OutboxMessage))).all()
        return row


async def test_a_delivery_that_always_raises_is_backed_off_then_given_up(db: Database) -> None:
    """Before, the row was claimed again each time its lease lapsed, for as long as Feishu's
    dedupe window lasted, with nothing recorded. Now each failure waits a growing backoff,
    and after MAX_CLAIMS deliveries the row is settled uncertain: no claim finds it again."""
    await _due(db, "oc_1")
    sender = _Raising(db, "host-a")
    waits: list[float] = []
    for _ in range(MAX_CLAIMS + 3):  # more rounds than a row is ever tried
        for row in await sender.claim(1):
            await sender.work(row)
            assert await sender.claim(1) == []  # not due again until its backoff is over
        settled = await _row(db)
        if settled.state != outbox.PENDING:
            break
        waits.append((settled.next_attempt_at - utcnow()).total_seconds())
        async with db.write() as tx:  # the backoff passes (the test's clock, not the wall's)
            await tx.execute(update(OutboxMessage).values(next_attempt_at=utcnow()))
    assert sender.calls == MAX_CLAIMS
    assert settled.state == outbox.UNCERTAIN
    assert settled.last_error == "OverflowError: value out of int64 range"
    assert waits == sorted(waits) and waits[0] < waits[-1]  # growing
