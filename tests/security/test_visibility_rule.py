"""The one visibility rule as a table: conversation kind × who asks × every read path.

Only the owner's DM, asked by the owner or by nobody in particular (the DM's own participant),
sees everything. Everywhere else — an admin's DM, a member's DM, a group, the owner asking
outside their DM, anyone but the owner asking in the owner's DM — sees its own conversation
and its own search scope, plus the sources the owner shared with it; being an admin widens
nothing. No conversation sees nothing.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.assistant.visibility import visibility_of
from bot.channels.console.identity import CONSOLE_PLATFORM
from bot.config import Settings
from storage.db import create_database
from storage.models import Conversation
from storage.repos import source_shares
from storage.repos import sources as source_repo
from storage.search import SearchFilters
from storage.types import utcnow
from tests import databases
from tests.apps import make_settings
from tests.seed import OWNER

ADMIN, MEMBER, STRANGER = "ou_admin", "ou_member", "ou_stranger"
OWNER_SCOPE, MAIL_SCOPE = f"dm:{OWNER}", "mail:INBOX"

# name -> (platform, chat_id, chat_type, peer_open_id); "none" is the absence of a conversation.
CONVERSATIONS: dict[str, tuple[str, str, str, str | None]] = {
    "owner-dm": ("feishu", "oc_owner_dm", "p2p", OWNER),
    "admin-dm": ("feishu", "oc_admin_dm", "p2p", ADMIN),
    "member-dm": ("feishu", "oc_member_dm", "p2p", MEMBER),
    "group": ("feishu", "oc_group", "group", None),
    "group-with-shared-mail": ("feishu", "oc_shared", "group", None),
    "console-owner-dm": (CONSOLE_PLATFORM, "console-dm", "p2p", OWNER),
    "elsewhere": ("feishu", "oc_elsewhere", "group", None),  # "another conversation"
}
OWN_SCOPES = {
    "owner-dm": OWNER_SCOPE,
    "admin-dm": f"dm:{ADMIN}",
    "member-dm": f"dm:{MEMBER}",
    "group": "group:oc_group",
    "group-with-shared-mail": "group:oc_shared",
    "console-owner-dm": OWNER_SCOPE,  # the console's owner DM is scoped like the Feishu one
    "none": None,
}
REQUESTERS: dict[str, str | None] = {
    "owner": OWNER,
    "admin": ADMIN,
    "member": MEMBER,
    "participant": None,  # no one in particular: the conversation's own participant
    "not-the-peer": STRANGER,
}


@dataclass(frozen=True)
class Sees:
    """What a case must see: everything, or its own conversation plus these scopes."""

    everything: bool = False
    scopes: frozenset[str] = frozenset()
    conversation: bool = True  # its own conversation (False only without one)


ALL = Sees(everything=True)
NOTHING = Sees(conversation=False)


def own(*scopes: str) -> Sees:
    return Sees(scopes=frozenset(scopes))


# The table. Every conversation kind against every requester; nothing is derived from the rule.
TABLE: dict[tuple[str, str], Sees] = {
    ("owner-dm", "owner"): ALL,
    ("owner-dm", "participant"): ALL,
    ("owner-dm", "admin"): own(OWNER_SCOPE),
    ("owner-dm", "member"): own(OWNER_SCOPE),
    ("owner-dm", "not-the-peer"): own(OWNER_SCOPE),
    ("admin-dm", "owner"): own("dm:ou_admin"),
    ("admin-dm", "admin"): own("dm:ou_admin"),
    ("admin-dm", "member"): own("dm:ou_admin"),
    ("admin-dm", "participant"): own("dm:ou_admin"),
    ("admin-dm", "not-the-peer"): own("dm:ou_admin"),
    ("member-dm", "owner"): own("dm:ou_member"),
    ("member-dm", "admin"): own("dm:ou_member"),
    ("member-dm", "member"): own("dm:ou_member"),
    ("member-dm", "participant"): own("dm:ou_member"),
    ("member-dm", "not-the-peer"): own("dm:ou_member"),
    ("group", "owner"): own("group:oc_group"),
    ("group", "admin"): own("group:oc_group"),
    ("group", "member"): own("group:oc_group"),
    ("group", "participant"): own("group:oc_group"),
    ("group", "not-the-peer"): own("group:oc_group"),
    ("group-with-shared-mail", "owner"): own("group:oc_shared", MAIL_SCOPE),
    ("group-with-shared-mail", "admin"): own("group:oc_shared", MAIL_SCOPE),
    ("group-with-shared-mail", "member"): own("group:oc_shared", MAIL_SCOPE),
    ("group-with-shared-mail", "participant"): own("group:oc_shared", MAIL_SCOPE),
    ("group-with-shared-mail", "not-the-peer"): own("group:oc_shared", MAIL_SCOPE),
    ("console-owner-dm", "owner"): ALL,
    ("console-owner-dm", "participant"): ALL,
    ("console-owner-dm", "admin"): own(OWNER_SCOPE),
    ("console-owner-dm", "member"): own(OWNER_SCOPE),
    ("console-owner-dm", "not-the-peer"): own(OWNER_SCOPE),
    ("none", "owner"): NOTHING,
    ("none", "admin"): NOTHING,
    ("none", "member"): NOTHING,
    ("none", "participant"): NOTHING,
    ("none", "not-the-peer"): NOTHING,
}


def test_the_table_covers_every_conversation_kind_and_requester() -> None:
    kinds = [k for k in CONVERSATIONS if k != "elsewhere"] + ["none"]
    assert set(TABLE) == {(k, r) for k in kinds for r in REQUESTERS}


def expected_paths(conversation: str, sees: Sees) -> dict[str, object]:
    """Every read path's answer for a case, from the table row alone."""
    scopes = sees.scopes
    return {
        "its own conversation": sees.everything or sees.conversation,
        "the owner DM's conversation": sees.everything or conversation == "owner-dm",
        "another conversation": sees.everything,
        "no conversation (a task started nowhere)": sees.everything,
        "its own scope": sees.everything or (OWN_SCOPES[conversation] in scopes),
        "scope dm:ou_owner (the owner's DM)": sees.everything or OWNER_SCOPE in scopes,
        "scope mail:INBOX (the owner's mail)": sees.everything or MAIL_SCOPE in scopes,
        "scope None (account rows)": sees.everything,
        "search filters": None if sees.everything else SearchFilters(scopes=sorted(scopes)),
    }


@dataclass(frozen=True)
class Rows:
    url: str
    ids: dict[str, int]
    settings: Settings


async def _create_rows(url: str) -> dict[str, int]:
    db = create_database(url)
    try:
        async with db.write() as s:
            rows = {}
            for name, (platform, chat_id, chat_type, peer) in CONVERSATIONS.items():
                rows[name] = Conversation(
                    platform=platform,
                    chat_id=chat_id,
                    chat_type=chat_type,
                    peer_open_id=peer,
                    listen_all=False,
                    created_at=utcnow(),
                )
                s.add(rows[name])
            await s.flush()
            await source_repo.ensure(
                s, name="email:INBOX", kind="email", scope=MAIL_SCOPE, title="INBOX", now=utcnow()
            )
            await source_shares.share(
                s,
                source="email:INBOX",
                conversation_id=rows["group-with-shared-mail"].id,
                by=OWNER,
                now=utcnow(),
            )
            return {name: row.id for name, row in rows.items()}
    finally:
        await db.dispose()


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def rows(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path
) -> Rows:
    """The rows, once per database kind for the whole table (the cases only read them): a
    copy of the migrated SQLite template, or the run's PostgreSQL database truncated as
    `database_url` does it."""
    if request.param == "sqlite":
        url = databases.copy_sqlite(sqlite_template, tmp_path_factory.mktemp("table") / "maka.db")
    else:
        url = request.getfixturevalue("postgres_run_database")
        asyncio.run(databases.truncate_postgres(url))
    ids = asyncio.run(_create_rows(url))
    settings = make_settings(tmp_path_factory.mktemp("settings"), url, owner=OWNER, admins=[ADMIN])
    return Rows(url, ids, settings)


@pytest.mark.parametrize(
    ("conversation", "requester"), list(TABLE), ids=[f"{c}/asked-by-{r}" for c, r in TABLE]
)
async def test_visibility_of(conversation: str, requester: str, rows: Rows) -> None:
    ids = rows.ids
    db = create_database(rows.url)
    try:
        async with db.read() as s:
            conv = await s.get(Conversation, ids[conversation]) if conversation in ids else None
            v = await visibility_of(s, rows.settings, conv, REQUESTERS[requester])
    finally:
        await db.dispose()

    own_id = ids.get(conversation)
    actual = {
        "its own conversation": v.sees_conversation(own_id),
        "the owner DM's conversation": v.sees_conversation(ids["owner-dm"]),
        "another conversation": v.sees_conversation(ids["elsewhere"]),
        "no conversation (a task started nowhere)": v.sees_conversation(None),
        "its own scope": v.sees_scope(OWN_SCOPES[conversation]),
        "scope dm:ou_owner (the owner's DM)": v.sees_scope(OWNER_SCOPE),
        "scope mail:INBOX (the owner's mail)": v.sees_scope(MAIL_SCOPE),
        "scope None (account rows)": v.sees_scope(None),
        "search filters": v.search_filters(),
    }
    sees = TABLE[(conversation, requester)]
    assert actual == expected_paths(conversation, sees)
    assert v.everything is sees.everything
    if not sees.everything:
        filters = v.search_filters()
        assert filters is not None
        # A scoped search never falls back to "no restriction": with nothing, it finds nothing.
        assert filters.matches_nothing() is (not sees.scopes)
