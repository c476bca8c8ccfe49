"""Upgrading a database that holds data: every revision alembic knows, on both databases.

A fresh database of each kind is walked up the revisions, either one at a time or in long jumps
(from the first revision to the middle one, then to head). At each stop before head, every
writer whose tables exist by then adds a batch of rows tagged with that revision, with raw
SQL against the columns its tables had when they appeared (what that version wrote; columns
added later must default, as they must for a live upgrade). Then `migrate` (what `maka serve`
and `maka migrate` run) takes it to head, and each batch is read back through today's repos and
search index. A migration added later is covered without touching this file; a writer is keyed
by the revision its tables appeared in.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import LargeBinary, bindparam, select, text
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.cli.search import rebuild
from bot.memory.search import SearchService
from storage.db import Database, create_database
from storage.migrate import current_revision, head_revision, known_revisions, migrate
from storage.models import Matter, ModelCall, Session
from storage.repos import (
    attachments,
    conversations,
    inbound,
    inbox,
    outbox,
    sessions,
    source_records,
    sources,
)
from storage.repos.inbound import NewEvent
from storage.search.embedded import EmbeddedSearchIndex
from storage.types import JSONType, UTCDateTime
from storage.urls import normalize_database_url
from tests import databases

WRITTEN_AT = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def empty_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield normalize_database_url(f"sqlite:///{tmp_path / 'old.db'}")
        return
    server = request.getfixturevalue("postgres_server")
    url = asyncio.run(databases.create_postgres_database(server, migrated=False))
    yield url
    asyncio.run(databases.drop_postgres_database(server, url))


def word(tag: str) -> str:
    """A word only this batch's rows hold (letters: the tokenizer keeps it whole)."""
    return "zq" + "".join(chr(ord("a") + int(d)) for d in tag if d.isdigit()) + "x"


async def insert(conn: AsyncConnection, table: str, row: dict[str, Any]) -> int:
    """One row as the ORM of that version bound it (JSON and UTC times through our types)."""
    typed = [
        bindparam(k, type_=UTCDateTime())
        if isinstance(v, datetime)
        else bindparam(k, type_=LargeBinary())
        if isinstance(v, bytes)
        else bindparam(k, type_=JSONType)
        if isinstance(v, dict | list)
        else bindparam(k)
        for k, v in row.items()
    ]
    columns, values = ", ".join(row), ", ".join(f":{k}" for k in row)
    returning = "" if table == "attachment_blobs" else " RETURNING id"  # keyed by its hash
    stmt = text(f"INSERT INTO {table} ({columns}) VALUES ({values}){returning}")
    result = await conn.execute(stmt.bindparams(*typed), row)
    return int(result.scalar_one()) if returning else 0


# ---- writers: the rows of one batch, keyed by the revision their tables appeared in --------


async def write_chat(conn: AsyncConnection, tag: str) -> None:
    """0001: a group chat with its coordination Session, a turn logged, one message handled and
    one still waiting, one reply sent and one not yet, a model call."""
    now = WRITTEN_AT
    chat = await insert(conn, "conversations", {
        "platform": "feishu", "chat_id": f"oc_{tag}", "chat_type": "group",
        "name": f"team {tag}", "listen_all": False, "created_at": now,
    })  # fmt: skip
    session = await insert(conn, "sessions", {
        "name": f"chat {tag}", "role": "coordination", "state": "active", "is_archived": False,
        "labels": [], "conversation_id": chat, "created_at": now, "last_message_at": now,
    })  # fmt: skip
    for seq, kind, said in [(1, "user", f"budget {word(tag)} please"), (2, "assistant", "done")]:
        await insert(conn, "session_events", {
            "session_id": session, "seq": seq, "kind": kind, "text": said,
            "payload": {"message_id": f"om_{tag}_1"}, "created_at": now,
        })  # fmt: skip
    for n in (1, 2):
        await insert(conn, "inbound_events", {
            "platform": "feishu", "message_id": f"om_{tag}_{n}",
            "event_type": "im.message.receive_v1", "chat_id": f"oc_{tag}",
            "payload": {"message_id": f"om_{tag}_{n}"}, "status": "handled", "received_at": now,
        })  # fmt: skip
        await insert(conn, "inbox_items", {
            "conversation_id": chat, "kind": "message", "dedupe_key": f"feishu:om_{tag}_{n}",
            "payload": {"text": f"message {n}", "sender_id": "ou_alice",
                        "message_id": f"om_{tag}_{n}"},
            "created_at": now, "delivered_at": now if n == 1 else None,
        })  # fmt: skip
        await insert(conn, "outbox", {
            "idempotency_key": f"reply-{tag}-{n}", "conversation_id": chat,
            "platform": "feishu", "chat_id": f"oc_{tag}", "reply_to": f"om_{tag}_{n}",
            "in_thread": False, "content_type": "text", "content": {"text": f"reply {n}"},
            "state": "sent" if n == 1 else "pending", "attempts": 1 if n == 1 else 0,
            "platform_message_ids": [f"om_out_{tag}"] if n == 1 else None,
            "created_at": now, "next_attempt_at": now, "sent_at": now if n == 1 else None,
        })  # fmt: skip
    await insert(conn, "model_calls", {
        "purpose": f"turn-{tag}", "model": "m1", "input_tokens": 120, "output_tokens": 30,
        "latency_ms": 900, "created_at": now,
    })  # fmt: skip


async def write_task(conn: AsyncConnection, tag: str) -> None:
    """0005: a task Session whose Matter is completed."""
    now = WRITTEN_AT
    task = await insert(conn, "sessions", {
        "name": f"task {tag}", "role": "task", "state": "active", "is_archived": False,
        "labels": [], "created_at": now,
    })  # fmt: skip
    await insert(conn, "matters", {
        "session_id": task, "objective": f"report {tag}", "amendments": [], "state_text": "",
        "status": "completed", "revision": 3, "wakes": [], "work_record": {}, "run_count": 2,
        "rejection_count": 0, "created_at": now, "updated_at": now,
    })  # fmt: skip


async def write_source(conn: AsyncConnection, tag: str) -> None:
    """0006: a synced mailbox and one of its mails."""
    now = WRITTEN_AT
    await insert(conn, "sources", {
        "name": f"mail-{tag}", "kind": "mail", "title": f"Inbox {tag}",
        "synced_cursor": {"uid": 7}, "record_count": 1, "last_success_at": now,
        "created_at": now, "updated_at": now,
    })  # fmt: skip
    await insert(conn, "source_records", {
        "source": f"mail-{tag}", "external_id": f"<{tag}@example.com>", "scope": f"mail-{tag}",
        "title": "quarterly numbers", "text": f"the {word(tag)} figures are attached",
        "author": "bob@example.com", "sent_at": now, "thread_key": f"t-{tag}",
        "payload": {"uid": 7}, "created_at": now,
    })  # fmt: skip


def blob_of(tag: str) -> bytes:
    return f"%PDF-1.4 minutes of {tag}".encode()


async def write_attachment(conn: AsyncConnection, tag: str) -> None:
    """0022: a file sent in a chat, fetched and read: its bytes, its row, its text's record."""
    now, data = WRITTEN_AT, blob_of(tag)
    sha = hashlib.sha256(data).hexdigest()
    await insert(conn, "attachment_blobs", {
        "sha256": sha, "size": len(data), "data": data, "kind": "pdf",
        "text": f"minutes {word(tag)}", "detail": "1 page", "extracted_at": now, "created_at": now,
    })  # fmt: skip
    record = await insert(conn, "source_records", {
        "source": f"feishu:oc_file_{tag}", "external_id": f"om_file_{tag}#att:file_{tag}",
        "scope": f"chat:oc_file_{tag}", "title": f"minutes-{tag}.pdf",
        "text": f"minutes {word(tag)}", "author": "ou_alice", "sent_at": now,
        "payload": {"attachment": {"name": f"minutes-{tag}.pdf", "sha256": sha},
                    "parent": f"om_file_{tag}"},
        "created_at": now,
    })  # fmt: skip
    await insert(conn, "attachments", {
        "platform": "feishu", "message_id": f"om_file_{tag}", "resource_key": f"file_{tag}",
        "source": f"feishu:oc_file_{tag}", "scope": f"chat:oc_file_{tag}",
        "chat_id": f"oc_file_{tag}", "kind": "file", "name": f"minutes-{tag}.pdf",
        "declared_size": len(data), "author": "ou_alice", "sent_at": now, "state": "done",
        "sha256": sha, "record_id": record, "attempts": 1, "created_at": now, "updated_at": now,
    })  # fmt: skip


Writer = Callable[[AsyncConnection, str], Awaitable[None]]
WRITERS: list[tuple[str, Writer]] = [
    ("0001", write_chat),
    ("0005", write_task),
    ("0006", write_source),
    ("0022", write_attachment),
]


def before(tag: str, revision: str, revisions: list[str]) -> bool:
    return revisions.index(tag) < revisions.index(revision)


# ---- what each batch must read as at head --------------------------------------------------


async def check_chat(db: Database, tag: str, revisions: list[str]) -> None:
    async with db.read() as tx:
        chat = await conversations.by_chat(tx, "feishu", f"oc_{tag}")
        assert chat is not None, f"batch {tag}: the conversation is gone"
        coordination = await tx.scalar(select(Session.id).where(Session.conversation_id == chat.id))
        if before(tag, "0014", revisions):  # 0014 filled in the pointer for older chats
            assert chat.coordination_session_id == coordination, tag
        assert coordination is not None
        history = await sessions.recent_events(tx, coordination, ("user", "assistant"), 10, 10)
        assert [e.text for e in history] == [f"budget {word(tag)} please", "done"], tag
        pending = await inbox.pending_for_conversation(tx, chat.id, now=WRITTEN_AT)
        assert [p.payload["message_id"] for p in pending] == [f"om_{tag}_2"], tag
        assert await outbox.sent_ids(tx, f"reply-{tag}-1") == [f"om_out_{tag}"], tag
        [call] = (
            await tx.scalars(select(ModelCall).where(ModelCall.purpose == f"turn-{tag}"))
        ).all()
        assert (call.input_tokens, call.usage_estimated, call.fallback) == (120, False, False)
    async with db.write() as tx:  # Feishu redelivering an old message: still a duplicate
        redelivered = NewEvent(
            "feishu", f"om_{tag}_1", "im.message.receive_v1", f"oc_{tag}", {}, "new", WRITTEN_AT
        )
        assert await inbound.insert_many_if_new(tx, [redelivered]) == set(), tag


async def check_task(db: Database, tag: str, revisions: list[str]) -> None:
    async with db.read() as tx:
        matter = await tx.scalar(select(Matter).where(Matter.objective == f"report {tag}"))
        assert matter is not None and matter.status == "completed", tag
        task = await tx.get(Session, matter.session_id)
        assert task is not None
        if before(tag, "0020", revisions):  # 0020: a task Session's state follows its Matter
            assert task.state == "done", tag


async def check_source(db: Database, tag: str, revisions: list[str]) -> None:
    async with db.read() as tx:
        source = await sources.get(tx, f"mail-{tag}")
        assert source is not None and source.synced_cursor == {"uid": 7}, tag
        assert await source_records.count_records(tx, f"mail-{tag}") == 1, tag


async def check_attachment(db: Database, tag: str, revisions: list[str]) -> None:
    async with db.read() as tx:
        [row] = await attachments.of_messages(tx, "feishu", [f"om_file_{tag}"])
        assert (row.state, row.name) == (attachments.DONE, f"minutes-{tag}.pdf"), tag
        assert row.sha256 is not None and row.record_id is not None
        stored = await attachments.blob(tx, row.sha256)
        assert stored is not None and bytes(stored.data) == blob_of(tag), tag
        [record] = await source_records.records_between(tx, [(row.record_id, row.record_id)], 1)
        assert record.text == f"minutes {word(tag)}", tag


Check = Callable[[Database, str, list[str]], Awaitable[None]]
CHECKS: dict[Writer, Check] = {
    write_chat: check_chat,
    write_task: check_task,
    write_source: check_source,
    write_attachment: check_attachment,
}


def stops(revisions: list[str], walk: str) -> list[str]:
    """Where the database stops to be written to on its way to head."""
    if walk == "every-revision":  # each migration runs over data of every older version
        return revisions[:-1]
    # An install left for long: a single `migrate` crosses many revisions in one transaction.
    return [revisions[0], revisions[len(revisions) // 2]]


@pytest.mark.parametrize("walk", ["every-revision", "long-jumps"])
async def test_every_earlier_schema_upgrades_to_head_with_its_data_intact(
    empty_database_url: str, tmp_path: Path, walk: str
) -> None:
    revisions = known_revisions()
    head = revisions[-1]
    assert head == head_revision()
    db = create_database(empty_database_url)
    written: list[tuple[str, Writer]] = []
    try:
        for revision in stops(revisions, walk):
            await migrate(db, revision)
            async with db.engine.begin() as conn:
                for appeared, writer in WRITERS:
                    if not before(revision, appeared, revisions):
                        await writer(conn, revision)
                        written.append((revision, writer))
        assert written, "no revision before head wrote anything"
        await migrate(db)
        assert await current_revision(db) == head
        for tag, writer in written:
            await CHECKS[writer](db, tag, revisions)
        await check_outbox_delivers_each_waiting_reply_once(db, written)
        await check_search_finds_every_batch(db, written, tmp_path)
    finally:
        await db.dispose()


async def check_outbox_delivers_each_waiting_reply_once(
    db: Database, written: list[tuple[str, Writer]]
) -> None:
    waiting = {f"reply-{tag}-2" for tag, writer in written if writer is write_chat}
    now = WRITTEN_AT + timedelta(minutes=1)
    claims = []
    for owner in ("sender-a", "sender-b"):
        async with db.write() as tx:
            claims.append(
                await outbox.claim_due(
                    tx, platform="feishu", owner=owner, now=now, limit=500,
                    lease=timedelta(minutes=5),
                )
            )  # fmt: skip
    assert {row.idempotency_key for row in claims[0]} == waiting
    assert claims[1] == [], "an old sent or claimed reply was claimed again"


async def check_search_finds_every_batch(
    db: Database, written: list[tuple[str, Writer]], tmp_path: Path
) -> None:
    expected: dict[str, set[tuple[str, str]]] = {}
    for tag, writer in written:
        if writer is write_chat:
            expected.setdefault(tag, set()).add(("session_user", f"chat {tag}"))
        if writer is write_source:
            expected.setdefault(tag, set()).add(("source_mail", "quarterly numbers"))
        if writer is write_attachment:
            expected.setdefault(tag, set()).add(
                ("source_message", f"attachment 'minutes-{tag}.pdf' in chat:oc_file_{tag}")
            )
    search = SearchService(EmbeddedSearchIndex(tmp_path / "search"))
    try:
        await rebuild(db, search, tool_output=False)
        for tag, wanted in expected.items():
            hits = await search.search(word(tag))
            assert {(hit.kind, hit.title) for hit in hits} == wanted, tag
    finally:
        await search.close()
