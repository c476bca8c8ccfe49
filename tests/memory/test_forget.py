"""Forgetting (`/forget`, `maka forget`): what the owner has the assistant forget leaves the
records, search, memory index entries, notebook notes and attachments; what else is stored
stays. Both databases; the chat test runs the real app (search follower, Feishu fake)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

import bot.assistant.worker as worker_module
from bot.forget import batch
from bot.forget import worker as forget_worker
from bot.forget.parse import parse_words
from bot.llm.scripted import ScriptedProvider
from bot.memory.recall import memory_search
from bot.web.status.report import build_report
from storage.db import Database
from storage.models import (
    Attachment,
    AttachmentBlob,
    ForgetRequest,
    InboxItem,
    IndexEntry,
    MemoryIndex,
    NotebookNote,
    SessionEvent,
    SourceRecord,
)
from storage.repos import forgets, source_records
from storage.repos import sources as source_repo
from storage.repos.source_records import NewRecord, is_tombstone
from storage.repos.taken_back import RECALLED
from storage.types import utcnow
from tests.assistant.support import bot_world, quiet, replies, say, send
from tests.channels.feishu.test_recalls import owner_access
from tests.feishu_world import FeishuWorld, WorldFactory
from tests.waiting import wait_until

TEAM, OTHER, MAIL = "feishu:oc_team", "feishu:oc_other", "email:INBOX"
SHARED_BLOB, MAIL_BLOB = "a" * 64, "b" * 64


def at(day: str) -> datetime:
    return datetime.fromisoformat(day).replace(tzinfo=UTC)


RECORDS = [
    NewRecord(TEAM, "m1", "group:oc_team", "the falcon budget is 7M", at("2026-01-10"), "ou_alice"),
    NewRecord(TEAM, "m2", "group:oc_team", "the heron meeting moved", at("2026-01-20"), "ou_bob"),
    NewRecord(
        OTHER, "m3", "group:oc_other", "the osprey plan is ready", at("2026-02-05"), "ou_alice"
    ),
    NewRecord(
        OTHER, "m4", "group:oc_other", "the kestrel deal closed", at("2026-02-10"), "ou_carol"
    ),
    NewRecord(
        MAIL, "e1", "mail:INBOX", "the condor invoice", at("2026-01-15"), "Dana <dana@x.org>"
    ),
    NewRecord(
        MAIL,
        "e1#att:k1",
        "mail:INBOX",
        "condor invoice total",
        at("2026-01-15"),
        "Dana <dana@x.org>",
    ),
]


async def seed(db: Database) -> dict[str, int]:
    """The records, an index citing them (paused: no model maintains it here), notebook
    notes citing them, and attachments (the mail's blob of its own, and one blob shared by
    the mail and a chat message)."""
    now = utcnow()
    async with db.write() as tx:
        for name, kind, title in (
            (TEAM, "feishu", "Team"),
            (OTHER, "feishu", "Other"),
            (MAIL, "email", "INBOX"),
        ):
            await source_repo.ensure(tx, name=name, kind=kind, scope=None, title=title, now=now)
        seqs = {e: i for i, _s, e in await source_records.insert_records(tx, RECORDS, now)}
        index = MemoryIndex(
            name="notes",
            criteria="everything",
            scopes=None,
            created_at=now,
            updated_at=now,
            paused=True,
        )
        tx.add(index)
        await tx.flush()
        for key, refs in (("falcon", ["m1"]), ("birds", ["m1", "m3"]), ("kestrel", ["m4"])):
            tx.add(
                IndexEntry(
                    index_id=index.id,
                    key=key,
                    text=f"about {key}",
                    refs=[seqs[r] for r in refs],
                    updated_at=now,
                )
            )
        for text, ref in (("falcon budget noted", "m1"), ("kestrel deal noted", "m4")):
            tx.add(
                NotebookNote(
                    author="discovery",
                    kind="situation",
                    text=text,
                    refs=[f"rec-{seqs[ref]}"],
                    created_at=now,
                )
            )
        for sha in (SHARED_BLOB, MAIL_BLOB):
            tx.add(AttachmentBlob(sha256=sha, size=1, data=b"x", created_at=now))
        for platform, message, key, source, sha, record in (
            ("email", "e1", "k1", MAIL, MAIL_BLOB, seqs["e1#att:k1"]),
            ("email", "e1", "k2", MAIL, SHARED_BLOB, None),
            ("feishu", "m4", "img", OTHER, SHARED_BLOB, None),
        ):
            tx.add(
                Attachment(
                    platform=platform,
                    message_id=message,
                    resource_key=key,
                    source=source,
                    scope="s",
                    kind="file",
                    name=key,
                    state="done",
                    sha256=sha,
                    record_id=record,
                    attempts=0,
                    created_at=now,
                    updated_at=now,
                )
            )
    return seqs


async def live_texts(db: Database) -> set[str]:
    async with db.read() as tx:
        rows = (await tx.scalars(select(SourceRecord))).all()
    return {r.text for r in rows if not is_tombstone(r.payload)}


async def entry_keys(db: Database) -> set[str]:
    async with db.read() as tx:
        return set((await tx.scalars(select(IndexEntry.key))).all())


async def note_texts(db: Database) -> set[str]:
    async with db.read() as tx:
        return set((await tx.scalars(select(NotebookNote.text))).all())


async def forget(db: Database, words: Sequence[str], size: int = batch.BATCH) -> batch.Progress:
    """A request stored and carried out as the worker does, in batches of `size`."""
    sel, _ = parse_words(list(words), UTC)
    async with db.write() as tx:
        await forgets.create(tx, sel, "ou_owner", utcnow())
    async with db.write() as tx:
        request = await forgets.claim_due(tx, owner="t", now=utcnow(), lease=batch.LEASE)
    assert request is not None
    while True:
        progress = await batch.run_batch(db, request, "t", size=size)
        if progress.done:
            return progress


async def test_forgetting_a_chat_leaves_search_index_entries_and_notes_and_spares_other_chats(
    make_world: WorldFactory,
) -> None:
    async with bot_world(make_world, ScriptedProvider([])) as w:
        services = w.app.services
        await seed(services.db)
        services.notifier.wake_local(source_records.RECORDS_TOPIC)

        async def found(words: str) -> bool:
            return bool(await services.search.search(words))

        await wait_until(lambda: found("falcon"), what="the team chat in search")
        await wait_until(lambda: found("kestrel"), what="the other chat in search")

        await say(w, "/forget chat oc_team")
        [plan] = await replies(w, 1)
        assert "2 records" in plan and "/forget chat oc_team confirm" in plan, plan
        assert "the falcon budget is 7M" in await live_texts(services.db)  # only a plan

        await say(w, "/forget chat oc_team confirm")
        done = (await replies(w, 2))[1]
        assert "Forgot chat oc_team" in done and "2 records" in done, done

        async def falcon_gone() -> bool:
            return not await found("falcon") and not await found("heron")

        await wait_until(falcon_gone, what="the forgotten chat out of search")
        assert await found("kestrel") and await found("osprey")
        texts = await live_texts(services.db)
        assert "the falcon budget is 7M" not in texts and "the heron meeting moved" not in texts
        assert "the osprey plan is ready" in texts
        assert await entry_keys(services.db) == {"kestrel"}  # "birds" cited m1 too
        assert await note_texts(services.db) == {"kestrel deal noted"}
        [shown] = (await build_report(services)).forgets
        assert shown.name == "forget #1" and shown.state.startswith("done") and not shown.red
        assert "2 records" in shown.state and "oc_team" not in shown.state


async def test_a_parked_forget_is_red_on_the_status_page(make_world: WorldFactory) -> None:
    async with bot_world(make_world, ScriptedProvider([])) as w:
        services = w.app.services
        sel, _ = parse_words(["chat", "oc_team"], UTC)
        async with services.db.write() as tx:
            request_id = await forgets.create(tx, sel, "ou_owner", utcnow())
            row = await tx.get(ForgetRequest, request_id)
            assert row is not None
            row.status, row.error = forgets.PARKED, "RuntimeError: disk full"
        [shown] = (await build_report(services)).forgets
        assert shown.red and shown.detail == "RuntimeError: disk full", shown


async def test_forgetting_a_person_removes_their_records_in_every_chat(db: Database) -> None:
    await seed(db)
    progress = await forget(db, ["person", "ou_alice"])
    assert progress.removed["records"] == 2
    texts = await live_texts(db)
    assert not {"the falcon budget is 7M", "the osprey plan is ready"} & texts
    assert {"the heron meeting moved", "the kestrel deal closed"} <= texts


async def test_a_chat_is_forgotten_by_its_name_as_by_its_id(db: Database) -> None:
    await seed(db)
    progress = await forget(db, ["chat", "Team"])
    assert progress.removed["records"] == 2 and progress.removed["notes"] == 1
    texts = await live_texts(db)
    assert not {"the falcon budget is 7M", "the heron meeting moved"} & texts
    assert "the osprey plan is ready" in texts


async def test_forgetting_a_mail_sender_by_address_removes_their_mail(db: Database) -> None:
    await seed(db)
    await forget(db, ["person", "dana@x.org"])
    assert not {"the condor invoice", "condor invoice total"} & await live_texts(db)


async def test_forgetting_a_date_range_keeps_what_is_outside_it(db: Database) -> None:
    await seed(db)
    await forget(db, ["between", "2026-01-12", "2026-02-06"])
    texts = await live_texts(db)
    assert texts == {"the falcon budget is 7M", "the kestrel deal closed"}, texts


async def test_forgetting_a_source_removes_its_attachments_and_blobs_no_one_else_uses(
    db: Database,
) -> None:
    await seed(db)
    progress = await forget(db, ["source", "email"])
    assert progress.removed["records"] == 2 and progress.removed["attachments"] == 2
    async with db.read() as tx:
        left = {
            (a.message_id, a.resource_key) for a in (await tx.scalars(select(Attachment))).all()
        }
        blobs = set((await tx.scalars(select(AttachmentBlob.sha256))).all())
    assert left == {("m4", "img")}
    assert blobs == {SHARED_BLOB}  # the chat message's attachment still uses it
    assert not {"the condor invoice", "condor invoice total"} & await live_texts(db)


async def test_a_failed_batch_is_rolled_back_and_the_forget_resumes_where_it_stopped(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    await seed(db)
    real = forgets.drop_notes
    calls = 0

    async def fails_second_batch(tx: AsyncSession, seqs: Sequence[int]) -> list[int]:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise RuntimeError("disk full")
        return await real(tx, seqs)

    monkeypatch.setattr(forgets, "drop_notes", fails_second_batch)
    sel, _ = parse_words(["source", "feishu"], UTC)
    async with db.write() as tx:
        await forgets.create(tx, sel, "ou_owner", utcnow())
    async with db.write() as tx:
        request = await forgets.claim_due(tx, owner="a", now=utcnow(), lease=batch.LEASE)
    assert request is not None
    with pytest.raises(RuntimeError, match="disk full"):
        await batch.run_claimed(db, request, "a", size=2)  # the team chat, then a failure
    assert "the kestrel deal closed" in await live_texts(db)  # the failed batch rolled back
    assert "the falcon budget is 7M" not in await live_texts(db)
    async with db.read() as tx:
        row = await tx.get(ForgetRequest, request.id)
    assert row is not None and row.status == forgets.PENDING and row.lease_owner is None
    assert row.attempts == 1 and row.error == "RuntimeError: disk full"
    assert row.removed["records"] == 2 and row.next_attempt_at is not None
    async with db.write() as tx:  # not due before its backoff ends
        assert await forgets.claim_due(tx, owner="b", now=utcnow(), lease=batch.LEASE) is None

    # Another process (as after a crash) takes it up once due, from the committed cursor.
    later = row.next_attempt_at + timedelta(seconds=1)
    async with db.write() as tx:
        again = await forgets.claim_due(tx, owner="b", now=later, lease=batch.LEASE)
    assert again is not None and again.id == request.id
    progress = await batch.run_claimed(db, again, "b", size=2)
    assert progress is not None and progress.removed["records"] == 4
    words = {w for t in await live_texts(db) for w in t.split()}
    assert not {"falcon", "heron", "osprey", "kestrel"} & words and "condor" in words
    assert await note_texts(db) == set()
    async with db.read() as tx:
        done = await tx.get(ForgetRequest, request.id)
    assert done is not None and done.status == forgets.DONE and done.error is None


async def test_forget_is_refused_to_anyone_but_the_owner_in_their_dm(
    make_world: WorldFactory,
) -> None:
    async with bot_world(make_world, ScriptedProvider([])) as w:
        await seed(w.app.services.db)
        await say(w, "/forget chat oc_team confirm", sender="ou_user")
        [answer] = await replies(w, 1)
        assert answer.startswith("not permitted"), answer
        assert "the falcon budget is 7M" in await live_texts(w.app.services.db)
        async with w.app.services.db.read() as tx:
            assert not (await tx.scalars(select(ForgetRequest))).all()


def test_a_forget_without_a_target_or_with_a_bad_day_is_one_clear_line() -> None:
    with pytest.raises(ValueError, match="say what to forget"):
        parse_words(["confirm"], UTC)
    with pytest.raises(ValueError, match="not a day"):
        parse_words(["between", "2026-13-01", "2026-02-01"], UTC)
    with pytest.raises(ValueError, match="end must come after"):
        parse_words(["between", "2026-02-01", "2026-01-01"], UTC)
    with pytest.raises(ValueError, match="'chat' needs a value after it"):
        parse_words(["chat"], UTC)
    with pytest.raises(ValueError, match="'between' needs two days after it"):
        parse_words(["between", "2026-02-01"], UTC)


async def test_a_forgotten_chat_leaves_the_turn_logs_and_the_bots_memory_search(
    make_world: WorldFactory,
) -> None:
    model = ScriptedProvider([send("send_user", {"text": "noted"}), send("sleep", {})])
    async with bot_world(make_world, model) as w:
        await say(w, "my locker is narwhal512")
        assert await replies(w, 1) == ["noted"]

        async def in_log_search() -> bool:
            hits = await w.app.services.search.search("narwhal512")
            return any(h.kind == "session_user" for h in hits)

        await wait_until(in_log_search, what="the turn's log in search")
        await say(w, "/forget chat oc_owner_dm confirm")
        answer = (await replies(w, 2))[1]
        assert "Forgot chat oc_owner_dm" in answer and "1 logs redacted" in answer, answer

        async def gone() -> bool:
            return not await w.app.services.search.search("narwhal512")

        await wait_until(gone, what="the forgotten words to leave search")
        assert await memory_search(owner_access(w), "narwhal512") == (
            "nothing found for 'narwhal512'"
        )
        async with w.app.services.db.read() as tx:
            logged = (
                await tx.scalars(select(SessionEvent).where(SessionEvent.kind == "user"))
            ).all()
        assert logged and all("narwhal512" not in e.text for e in logged)


async def forgotten_by_the_app(w: FeishuWorld, words: list[str]) -> None:
    """A request stored as /forget ... confirm stores it, carried out by the app's own worker
    (claiming it here would race that worker for it)."""
    services = w.app.services
    sel, _ = parse_words(words, UTC)
    async with services.db.write() as tx:
        request_id = await forgets.create(tx, sel, "ou_owner", utcnow())
        await services.notifier.publish(tx, forget_worker.TOPIC)
    services.notifier.wake_local(forget_worker.TOPIC)

    async def carried_out() -> bool:
        async with services.db.read() as tx:
            row = await forgets.get(tx, request_id)
        return row is not None and row.status == forgets.DONE

    await wait_until(carried_out, what=f"the app's forget worker to carry out #{request_id}")


async def test_a_forgotten_message_still_waiting_for_its_turn_is_never_answered(
    make_world: WorldFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker_module, "MAX_DEBOUNCE", 120.0)  # it waits while we forget
    model = ScriptedProvider([])  # a turn over the forgotten message would exhaust it
    async with bot_world(make_world, model, bot_debounce=60.0) as w:
        event = await say(w, "the vault code is zebra4471")
        key = f"feishu:{event['event']['message']['message_id']}"
        db = w.app.services.db

        async def stored() -> bool:
            async with db.read() as tx:
                return (
                    await tx.scalar(select(InboxItem).where(InboxItem.dedupe_key == key))
                    is not None
                )

        await wait_until(stored, what="the message in the inbox")
        await forgotten_by_the_app(w, ["chat", "oc_owner_dm"])
        async with db.read() as tx:
            item = await tx.scalar(select(InboxItem).where(InboxItem.dedupe_key == key))
        assert item is not None and item.batch_id == RECALLED and item.delivered_at is not None
        await quiet(w)
        assert model.requests == [] and w.fake.sent == []
