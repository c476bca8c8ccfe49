"""The extraction worker on its own: the same content is read once, an unreadable file fails
with its one line and writes no record, and part A's sandboxed reader is used when present."""

from __future__ import annotations

import hashlib
import importlib.util
from datetime import UTC, datetime

import pytest
from sqlalchemy import func, select

from bot.attachments.worker import ExtractionWorker, PlainRead, Read
from bot.host.notify import Notifier
from storage.db import Database
from storage.models import SourceRecord
from storage.repos import attachments
from storage.types import utcnow

SENT = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


async def _mailed(db: Database, key: str, data: bytes, name: str) -> None:
    """A file ready to be read, as a mail sync leaves it."""
    sha = hashlib.sha256(data).hexdigest()
    async with db.write() as tx:
        await attachments.store_blob(tx, sha, data, utcnow())
        await attachments.add_many(
            tx,
            [
                attachments.NewAttachment(
                    platform="mail",
                    message_id=f"mail-{key}",
                    resource_key="0",
                    source="email:INBOX",
                    scope="mail:INBOX",
                    kind="mail",
                    name=name,
                    author="li@example.com",
                    sent_at=SENT,
                    state=attachments.EXTRACT,
                    sha256=sha,
                )
            ],
            utcnow(),
        )


async def _row(db: Database, key: str) -> attachments.Attachment:
    async with db.read() as tx:
        [row] = await attachments.of_messages(tx, "mail", [f"mail-{key}"])
    return row


async def test_the_same_content_is_read_once_and_each_copy_gets_its_record(db: Database) -> None:
    calls: list[str] = []

    async def counting(data: bytes, name: str) -> Read:
        calls.append(name)
        return PlainRead("text", data.decode(), "1 line")

    worker = ExtractionWorker(db, Notifier(), "w1", extractor=counting)
    await _mailed(db, "a", b"the otter report", "a.txt")
    await _mailed(db, "b", b"the otter report", "b.txt")
    while await worker.run_once():
        pass
    rows = [await _row(db, "a"), await _row(db, "b")]
    async with db.read() as tx:
        texts = [(await tx.get(SourceRecord, r.record_id)) for r in rows]
    assert calls == ["a.txt"]
    assert [r.state for r in rows] == [attachments.DONE, attachments.DONE]
    assert [(t.title, t.text, t.external_id) for t in texts if t is not None] == [
        ("a.txt", "the otter report", "mail-a#att:0"),
        ("b.txt", "the otter report", "mail-b#att:0"),
    ]
    assert texts[0] is not None and texts[0].payload["attachment"]["detail"] == "1 line"


async def test_an_unreadable_file_fails_with_its_line_and_writes_no_record(db: Database) -> None:
    async def refusing(data: bytes, name: str) -> Read:
        return PlainRead("pdf", "", error="could not read: the PDF is encrypted")

    await _mailed(db, "locked", b"%PDF-encrypted", "locked.pdf")
    assert await ExtractionWorker(db, Notifier(), "w1", extractor=refusing).run_once()
    row = await _row(db, "locked")
    async with db.read() as tx:
        records = await tx.scalar(select(func.count()).select_from(SourceRecord))
    assert (row.state, row.error, row.record_id) == (
        attachments.FAILED,
        "could not read: the PDF is encrypted",
        None,
    )
    assert records == 0


async def test_a_reader_that_raises_is_backed_off_not_lost(db: Database) -> None:
    async def broken(data: bytes, name: str) -> Read:
        raise RuntimeError("sandbox crashed")

    await _mailed(db, "x", b"text", "x.txt")
    assert await ExtractionWorker(db, Notifier(), "w1", extractor=broken).run_once()
    row = await _row(db, "x")
    assert (row.state, row.attempts) == (attachments.EXTRACT, 1)
    assert row.error == "RuntimeError: sandbox crashed"


@pytest.mark.skipif(
    importlib.util.find_spec("bot.attachments.extract") is None,
    reason="part A's sandboxed reader (bot.attachments.extract) is not here yet",
)
async def test_the_sandboxed_reader_reads_a_text_file(db: Database) -> None:
    await _mailed(db, "real", "会议纪要: the wombat budget\n".encode(), "notes.txt")
    assert await ExtractionWorker(db, Notifier(), "w1").run_once()
    row = await _row(db, "real")
    async with db.read() as tx:
        record = await tx.get(SourceRecord, row.record_id)
    assert row.state == attachments.DONE
    assert record is not None and "wombat" in record.text
