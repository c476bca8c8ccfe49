from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import bindparam, inspect, select, text

from storage.db import create_database
from storage.migrate import alembic_config, current_revision, head_revision, migrate
from storage.models import Base, Conversation, Matter, Operation, Session
from storage.repos import source_records as sources_repo
from storage.types import JSONType, utcnow
from storage.urls import normalize_database_url
from tests import databases

EXPECTED_TABLES = {
    "conversations",
    "inbound_events",
    "inbox_items",
    "outbox",
    "sessions",
    "session_events",
    "model_calls",
    "timers",
    "leases",
}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def empty_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield normalize_database_url(f"sqlite:///{tmp_path / 'empty.db'}")
        return
    server = request.getfixturevalue("postgres_server")
    url = asyncio.run(databases.create_postgres_database(server, migrated=False))
    yield url
    asyncio.run(databases.drop_postgres_database(server, url))


async def test_migrations_apply_from_empty_and_match_the_models(empty_database_url: str) -> None:
    db = create_database(empty_database_url)
    try:
        assert await current_revision(db) is None
        await migrate(db)
        assert await current_revision(db) == head_revision()
        async with db.engine.connect() as conn:
            tables = set(await conn.run_sync(lambda c: inspect(c).get_table_names()))
            drift = await conn.run_sync(
                lambda c: compare_metadata(MigrationContext.configure(c), Base.metadata)
            )
        assert EXPECTED_TABLES <= tables
        assert drift == [], f"models and migrations differ: {drift}"
    finally:
        await db.dispose()


async def test_migrating_twice_is_harmless(empty_database_url: str) -> None:
    db = create_database(empty_database_url)
    try:
        await migrate(db)
        await migrate(db)
        assert await current_revision(db) == head_revision()
    finally:
        await db.dispose()


async def test_the_operations_migration_keeps_every_settle_and_routing_write(
    empty_database_url: str,
) -> None:
    """0011 moves matter_settles and workhub_actions into one operations table (and back on
    downgrade); a retried settle or routing write still converges on what was stored."""
    db = create_database(empty_database_url)
    now = utcnow()
    try:
        await migrate(db, "0010")
        async with db.write() as s:
            task = Session(name="nightly report", state="active", labels=[], is_archived=False)
            s.add(task)
            await s.flush()
            matter = Matter(session_id=task.id, objective="check it")
            s.add(matter)
            await s.flush()
            await s.execute(
                text(
                    "INSERT INTO matter_settles VALUES (:id, :matter, 'fp-s', :outcome, :at)"
                ).bindparams(bindparam("outcome", type_=JSONType)),
                {"id": f"matter:{matter.id}:rev:0", "matter": matter.id, "at": now,
                 "outcome": {"status": "waiting", "revision": 1}},
            )  # fmt: skip
            await s.execute(
                text(
                    "INSERT INTO workhub_actions VALUES ('c1-i1:delegate:1', 'fp-d', 'delegate',"
                    " :task, :outcome, :at)"
                ).bindparams(bindparam("outcome", type_=JSONType)),
                {"task": task.id, "outcome": {"session_id": task.id}, "at": now},
            )
            ids = (task.id, matter.id)
        await migrate(db)
        async with db.read() as s:
            rows = {
                row.id: (row.kind, row.subject_id, row.fingerprint, row.outcome)
                for row in (await s.scalars(select(Operation))).all()
            }
        waiting = {"status": "waiting", "revision": 1}
        assert rows == {
            f"matter:{ids[1]}:rev:0": ("settle", ids[1], "fp-s", waiting),
            "c1-i1:delegate:1": ("delegate", ids[0], "fp-d", {"session_id": ids[0]}),
        }
        async with db.engine.begin() as conn:
            await conn.run_sync(lambda c: command.downgrade(alembic_config(c), "0010"))
        async with db.read() as s:
            settles = (await s.execute(text("SELECT operation_id FROM matter_settles"))).all()
            actions = (await s.execute(text("SELECT target_session_id FROM workhub_actions"))).all()
        assert [r[0] for r in settles] == [f"matter:{ids[1]}:rev:0"]
        assert [r[0] for r in actions] == [ids[0]]
    finally:
        await db.dispose()


async def test_conversations_point_at_the_coordination_sessions_made_before(
    empty_database_url: str,
) -> None:
    """0014: a Bot turn finds its conversation's coordination Session through the
    conversation's `coordination_session_id`; Sessions made before it are pointed at, so the
    next turn logs into the same one, and a conversation without one stays without."""
    db = create_database(empty_database_url)
    try:
        await migrate(db, "0013")
        async with db.write() as s:
            talked, quiet = (
                Conversation(platform="feishu", chat_id=chat, chat_type="p2p", name="")
                for chat in ("oc_talked", "oc_quiet")
            )
            s.add_all([talked, quiet])
            await s.flush()
            task = Session(name="a task", conversation_id=talked.id, labels=[], is_archived=False)
            log = Session(
                name="feishu:oc_talked", role="coordination", conversation_id=talked.id,
                labels=[], is_archived=False,
            )  # fmt: skip
            s.add_all([task, log])
            await s.flush()
            ids = (talked.id, quiet.id, log.id)
        await migrate(db)
        async with db.read() as s:
            rows = await s.execute(select(Conversation.id, Conversation.coordination_session_id))
            pointers = {conversation: pointer for conversation, pointer in rows}
        assert pointers == {ids[0]: ids[2], ids[1]: None}
    finally:
        await db.dispose()


async def test_task_sessions_take_the_state_of_their_matter(empty_database_url: str) -> None:
    """0020: a task Session's state follows its Matter's status; rows made before (all
    'active') get the state their Matter says, and one without a Matter keeps its own."""
    db = create_database(empty_database_url)
    statuses = ("active", "waiting", "paused", "completed", "cancelled")
    try:
        await migrate(db, "0017")
        async with db.write() as s:
            tasks = [
                Session(name=status, state="active", labels=[], is_archived=False)
                for status in (*statuses, "no matter")
            ]
            s.add_all(tasks)
            await s.flush()
            s.add_all(
                Matter(session_id=task.id, objective=task.name, status=task.name)
                for task in tasks[: len(statuses)]
            )
        await migrate(db)
        async with db.read() as s:
            states = dict((await s.execute(select(Session.name, Session.state))).all())
        assert states == {
            "active": "active",
            "waiting": "waiting",
            "paused": "blocked",
            "completed": "done",
            "cancelled": "cancelled",
            "no matter": "active",
        }
    finally:
        await db.dispose()


async def test_the_flat_reads_migration_counts_the_records_already_stored(
    empty_database_url: str,
) -> None:
    """0031 starts each source's kept count from the records written before it, and the
    triggers count on from there."""
    db = create_database(empty_database_url)
    now = utcnow()
    try:
        await migrate(db, "0030")
        async with db.write() as s:
            for source, n in (("feishu:oc_a", 3), ("email:INBOX", 2)):
                for i in range(n):
                    await s.execute(
                        text(
                            "INSERT INTO source_records (source, external_id, scope, text,"
                            " payload, created_at) VALUES (:source, :eid, 'scope', 'hi',"
                            " :payload, :at)"
                        ).bindparams(bindparam("payload", type_=JSONType)),
                        {"source": source, "eid": f"m{i}", "payload": {}, "at": now},
                    )
        await migrate(db)
        async with db.write() as s:
            await s.execute(
                text(
                    "DELETE FROM source_records WHERE source = 'email:INBOX' AND external_id = 'm0'"
                )
            )
        async with db.read() as s:
            counts = await sources_repo.counts_by_source(s)
        assert counts == {"feishu:oc_a": 3, "email:INBOX": 1}
    finally:
        await db.dispose()
