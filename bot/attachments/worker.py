"""The extraction worker: an attachment whose bytes are stored (state `extract`) becomes text,
written as its source record, and the row is done (or failed, with the one line saying why).

Content is read once per SHA-256: the same file sent again (or to another chat) reuses the
blob's stored extraction. The reading itself is `bot.attachments.extract.extract`, sandboxed
(part A), or any `Extractor` given instead (tests; a deployment without part A falls back to
reading UTF-8 text). An unreadable file writes no record: the row's `error` is what the turn
shows ("could not read: the PDF is encrypted").
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from bot.attachments import records
from bot.attachments.records import Attached
from bot.attachments.work import AttachmentWorker
from bot.host.notify import Notifier
from storage.db import Database
from storage.models import AttachmentBlob
from storage.repos import attachments
from storage.repos.source_records import RECORDS_TOPIC

log = logging.getLogger(__name__)


class Read(Protocol):
    """What an extraction gives (part A's `Extraction` has these fields)."""

    @property
    def kind(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def detail(self) -> str: ...
    @property
    def error(self) -> str | None: ...


Extractor = Callable[[bytes, str], Awaitable[Read]]


@dataclass(frozen=True)
class PlainRead:
    kind: str
    text: str
    detail: str = ""
    error: str | None = None


async def read_plain_text(data: bytes, name: str) -> Read:
    """The fallback reader: UTF-8 text as it is, anything else unreadable."""
    try:
        return PlainRead("text", data.decode("utf-8"))
    except UnicodeDecodeError:
        return PlainRead("unknown", "", error="could not read: not a kind of file read here")


async def sandboxed_extract(data: bytes, name: str) -> Read:
    """Part A's sandboxed `extract` with its default limits (imported on first use: the
    sandbox is a child process, and a deployment without it still reads text)."""
    try:
        from bot.attachments.extract import ExtractLimits, extract
    except ImportError:  # part A not installed: plain text only
        return await read_plain_text(data, name)
    result: Read = await extract(data, name=name, limits=ExtractLimits())
    return result


class ExtractionWorker(AttachmentWorker):
    name = "attachment-extraction"
    state = attachments.EXTRACT
    concurrency = 2  # each extraction is a child process with its own memory limit

    def __init__(
        self,
        db: Database,
        notifier: Notifier,
        instance_id: str,
        *,
        extractor: Extractor = sandboxed_extract,
    ) -> None:
        super().__init__(db, notifier, instance_id)
        self.extractor = extractor

    async def handle(self, unit: Attached) -> None:
        if unit.sha256 is None:  # a row in `extract` always has its bytes; this one lost them
            await self.fail(unit, "could not read: its content was not stored")
            return
        async with self.db.read() as tx:
            blob = await attachments.blob(tx, unit.sha256)
        if blob is None:
            await self.fail(unit, "could not read: its content was not stored")
            return
        if blob.extracted_at is not None:  # the same content was read before
            await self._settle(unit, _stored(blob), size=blob.size, save=False)
        else:
            read = await self.extractor(blob.data, unit.title)
            await self._settle(unit, read, size=blob.size, save=True)

    async def _settle(self, unit: Attached, read: Read, *, size: int, save: bool) -> None:
        sha256 = unit.sha256
        assert sha256 is not None

        async def write(tx: AsyncSession, now: datetime) -> bool:
            if save:
                await attachments.save_extraction(
                    tx,
                    sha256,
                    kind=read.kind,
                    text=read.text,
                    detail=read.detail,
                    error=read.error,
                    now=now,
                )
            if read.error:
                return await attachments.move(
                    tx, unit.id, self.owner, state=attachments.FAILED, now=now, error=read.error
                )
            return await records.finish(
                tx,
                unit,
                self.owner,
                text=read.text,
                kind=read.kind,
                detail=read.detail,
                size=size,
                sha256=sha256,
                now=now,
            )

        await self.settle("failed" if read.error else "done", write)
        if not read.error:  # (the record's insert wakes the other replicas' followers)
            self.notifier.wake_local(RECORDS_TOPIC)


def _stored(blob: AttachmentBlob) -> Read:
    return PlainRead(blob.kind or "unknown", blob.text or "", blob.detail or "", blob.error)
