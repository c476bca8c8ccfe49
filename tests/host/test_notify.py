"""Wake-ups between replicas on PostgreSQL: a publish reaches the other replica at commit, a
replica does not wake its own workers a second time when it hears its own notification, a
transaction sends each topic once, and an insert into a table of work wakes the other
replicas with no statement of ours (the tables' triggers). Each replica is a Database of its
own, as each process has: its connections carry its mark."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractContextManager
from datetime import UTC, datetime

import pytest
from sqlalchemy import text

from bot.channels.ingest import INBOX_TOPIC
from bot.host.notify import WOKEN_BY_INSERT, PostgresNotifier, Subscription
from bot.memory.session_index import TOPIC as SESSION_INDEX_TOPIC
from storage.db import Database, create_database
from storage.repos import inbox, outbox
from storage.repos.source_records import RECORDS_TOPIC
from tests.seed import pending_reply
from tests.statements import statements_of
from tests.waiting import wait_until

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


@pytest.mark.postgres
async def test_a_publish_wakes_the_other_replica_and_not_its_own_workers_twice(
    db: Database, other: Database, replicas: tuple[PostgresNotifier, PostgresNotifier]
) -> None:
    a, b = replicas
    on_a, on_b = a.subscribe(["outbox"]), b.subscribe(["outbox"])
    heard_b = a.subscribe(["inbox"])
    async with db.write() as tx:
        await a.publish(tx, "outbox")
    await wait_until(_set(on_b), what="replica b woken by a's commit")
    async with other.write() as tx:  # a hears its own first: notifications come in order
        await b.publish(tx, "inbox")
    await wait_until(_set(heard_b), what="replica a woken by b's commit")
    assert not on_a.event.is_set(), "a woke its own worker on hearing its own notification"


@pytest.fixture
async def replicas(
    db: Database, other: Database
) -> AsyncIterator[tuple[PostgresNotifier, PostgresNotifier]]:
    """Two replicas' notifiers, listening: `db`'s and `other`'s."""
    if db.is_sqlite:
        pytest.skip("LISTEN/NOTIFY is PostgreSQL's")
    a, b = PostgresNotifier(db), PostgresNotifier(other)
    await a.start()
    await b.start()
    yield a, b
    await a.close()
    await b.close()


@pytest.fixture
async def other(db: Database) -> AsyncIterator[Database]:
    """The same database as another process opens it."""
    database = create_database(db.url)
    yield database
    await database.dispose()


def notify_statements(db: Database) -> AbstractContextManager[list[str]]:
    """The `pg_notify` statements `db` sends meanwhile."""
    return statements_of(db, keep=lambda statement: "pg_notify" in statement)


def _set(sub: Subscription) -> Callable[[], Awaitable[bool]]:
    async def is_set() -> bool:
        return sub.event.is_set()

    return is_set


@pytest.mark.postgres
async def test_a_transaction_publishes_each_topic_once_in_one_statement(
    db: Database, replicas: tuple[PostgresNotifier, PostgresNotifier]
) -> None:
    """Grouped writes each publish their topic, and ingest publishes two: every topic
    reaches the other replica, in one statement however many, none twice."""
    a, b = replicas
    inbox, records = b.subscribe(["inbox"]), b.subscribe(["source-index"])
    with notify_statements(db) as statements:
        async with db.write() as tx:
            await a.publish(tx, "inbox", "source-index")
            await a.publish(tx, "inbox")  # a second grouped write's: already on its way
            await a.publish(tx)  # nothing to say
    await wait_until(_set(inbox), what="the first topic heard by replica b")
    await wait_until(_set(records), what="the second topic heard by replica b")
    assert len(statements) == 1, statements


@pytest.mark.postgres
async def test_an_insert_of_work_wakes_the_other_replica_with_no_statement_of_ours(
    db: Database, other: Database, replicas: tuple[PostgresNotifier, PostgresNotifier]
) -> None:
    a, b = replicas
    on_a = a.subscribe(["outbox", "inbox"])
    replies, messages = b.subscribe(["outbox"]), b.subscribe(["inbox"])
    with notify_statements(db) as statements:
        async with db.write() as tx:
            await pending_reply(tx, "oc_1", NOW)
            await inbox.append(tx, kind="user_message", payload={}, created_at=NOW)
    await wait_until(_set(replies), what="replica b woken by a's reply into the outbox")
    await wait_until(_set(messages), what="replica b woken by a's message into the inbox")
    heard = a.subscribe(["sources"])  # before b's commit: its notification may come at once
    async with other.write() as tx:  # a hears its own first: notifications come in order
        await b.publish(tx, "sources")
    await wait_until(_set(heard), what="replica a hearing b's later notification")
    assert statements == []
    assert not on_a.event.is_set(), "a woke its own workers on hearing its own inserts"


@pytest.mark.postgres
async def test_every_table_of_work_has_its_wake_up_trigger(db: Database) -> None:
    if db.is_sqlite:
        pytest.skip("the wake-up triggers are PostgreSQL's")
    async with db.read() as tx:
        rows = await tx.execute(
            text(
                "SELECT c.relname, pg_get_triggerdef(t.oid) FROM pg_trigger t"
                " JOIN pg_class c ON c.oid = t.tgrelid WHERE t.tgname LIKE 'maka_wake_%'"
            )
        )
        found = {table: definition for table, definition in rows}
    assert set(found) == set(WOKEN_BY_INSERT)
    # the topics the workers listen on, as their own modules name them
    assert WOKEN_BY_INSERT == {
        "inbox_items": INBOX_TOPIC,
        "outbox": outbox.OUTBOX_TOPIC,
        "source_records": RECORDS_TOPIC,
        "session_events": SESSION_INDEX_TOPIC,
    }
    for table, topic in WOKEN_BY_INSERT.items():
        assert f"maka_wake('{topic}')" in found[table]
