"""A set-based statement's list of ids or names is one parameter (`storage.repos._lists`): on
PostgreSQL its text is the same whatever the group's size, so each pooled connection prepares
it once, not once for every size a busy Bot's groups come in (each a round trip more)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from storage.db import Database
from storage.repos import conversations, inbox, leases
from storage.repos.conversations import NewConversation

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
TTL = timedelta(minutes=5)


async def test_renewing_groups_of_every_size_prepares_one_statement(db: Database) -> None:
    if db.is_sqlite:
        pytest.skip("SQLite prepares nothing across round trips: it has none")
    names = [f"conversation:{i}" for i in range(6)]
    async with db.write() as tx:  # one transaction: one connection, one statement cache
        await leases.acquire_all(tx, names, "host-a", TTL, NOW)
        held = [await leases.renew_all(tx, names[:size], "host-a", TTL, NOW) for size in (1, 3, 6)]
        prepared = await tx.scalar(
            text(
                "SELECT count(*) FROM pg_prepared_statements"
                " WHERE statement LIKE 'UPDATE leases SET expires_at%'"
            )
        )
    assert held == [set(names[:1]), set(names[:3]), set(names)]
    assert prepared == 1, f"{prepared} texts of one renewal were prepared"


async def test_an_empty_list_matches_nothing_and_excludes_nothing(db: Database) -> None:
    wanted = [NewConversation("feishu", "oc_1", "p2p", "ou_1")]
    async with db.write() as tx:
        chat = (await conversations.get_or_create_many(tx, wanted))[("feishu", "oc_1")].id
        await inbox.append(
            tx, kind="user_message", payload={"text": "hi"}, conversation_id=chat, created_at=NOW
        )
        await leases.acquire_all(tx, ["conversation:1"], "host-a", TTL, NOW)
        renewed = await leases.renew_all(tx, ["conversation:2"], "host-a", TTL, NOW)
        released = await leases.release_each(tx, ["conversation:1"], "host-b")
    readiness = inbox.Readiness(now=NOW + timedelta(seconds=1), debounce=TTL * 0, longest=TTL)
    async with db.read() as tx:
        none_skipped = await inbox.ready_conversations(tx, readiness, skip=[], limit=5)
        its_own_skipped = await inbox.ready_conversations(tx, readiness, skip=[chat], limit=5)
    assert renewed == set() and released == set()
    assert none_skipped == [chat]
    assert its_own_skipped == []
