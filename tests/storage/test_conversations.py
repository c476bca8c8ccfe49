"""Conversations are made on a chat's first message: many at once in one statement, and those
that existed already read in one more."""

from __future__ import annotations

from storage.db import Database
from storage.repos import conversations
from storage.repos.conversations import NewConversation
from tests.statements import statements_of


def _not_begin_or_commit(statement: str) -> bool:
    return not statement.startswith(("BEGIN", "COMMIT"))


async def test_a_burst_of_new_chats_is_made_in_two_statements_and_each_once(
    db: Database,
) -> None:
    async with db.write() as tx:
        existing = await conversations.get_or_create(
            tx, platform="feishu", chat_id="oc_old", chat_type="group"
        )
    wanted = [
        NewConversation("feishu", f"oc_dm{n}", "p2p", peer_open_id=f"ou_{n}") for n in range(5)
    ]
    wanted += [
        NewConversation("feishu", "oc_old", "group"),
        NewConversation("feishu", "oc_dm0", "group"),  # asked twice: the first ask stands
    ]
    with statements_of(db, keep=_not_begin_or_commit) as statements:
        async with db.write() as tx:
            found = await conversations.get_or_create_many(tx, wanted)

    # one insert, one read (of the one that existed), for seven asks
    assert len(statements) == 2, [s[:90] for s in statements]
    assert set(found) == {("feishu", "oc_old")} | {("feishu", f"oc_dm{n}") for n in range(5)}
    assert found[("feishu", "oc_old")].id == existing.id
    assert found[("feishu", "oc_dm0")].chat_type == "p2p"
    assert found[("feishu", "oc_dm3")].peer_open_id == "ou_3"
    async with db.write() as tx:  # asked again: the same rows, none made twice
        again = await conversations.get_or_create_many(tx, wanted)
    assert {k: c.id for k, c in again.items()} == {k: c.id for k, c in found.items()}


async def test_a_burst_of_only_new_chats_is_one_statement(db: Database) -> None:
    wanted = [NewConversation("feishu", f"oc_{n}", "p2p", peer_open_id=f"ou_{n}") for n in range(4)]
    wanted.append(NewConversation("feishu", "oc_group", "group"))  # no peer: NULL, same batch
    with statements_of(db, keep=_not_begin_or_commit) as statements:
        async with db.write() as tx:
            found = await conversations.get_or_create_many(tx, wanted)
    assert len(statements) == 1, [s[:90] for s in statements]
    assert len({c.id for c in found.values()}) == 5
    assert found[("feishu", "oc_group")].peer_open_id is None
    assert found[("feishu", "oc_2")].listen_all is False
