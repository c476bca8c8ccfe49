"""An attachment's text as a source record, and how one is named in a line.

The record sits beside its message's: the same source and scope (so it is seen exactly where
the message is, under the one visibility rule), external id `<message id>#att:<key>` (so a
recall of the message finds it), and a new seq, so the search follower and the memory indexes
pick it up as they pick up any record.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from storage.models import Attachment, SourceRecord
from storage.repos import attachments, source_records
from storage.repos.source_records import NewRecord

KIND_LABELS = {
    "pdf": "PDF",
    "docx": "Word",
    "xlsx": "Excel",
    "pptx": "PowerPoint",
    "text": "text",
    "html": "HTML",
    "image": "image",
    "audio": "voice message",
    "media": "video",
    "unknown": "file",
}


@dataclass(frozen=True)
class Attached:
    """A claimed attachment row as it was when claimed (workers hold this, not the ORM row)."""

    id: int
    platform: str
    message_id: str
    resource_key: str
    source: str
    scope: str
    chat_id: str | None
    kind: str
    name: str
    declared_size: int | None
    duration_ms: int | None
    author: str | None
    sent_at: datetime | None
    sha256: str | None
    attempts: int

    @classmethod
    def of(cls, row: Attachment) -> Attached:
        return cls(
            row.id,
            row.platform,
            row.message_id,
            row.resource_key,
            row.source,
            row.scope,
            row.chat_id,
            row.kind,
            row.name,
            row.declared_size,
            row.duration_ms,
            row.author,
            row.sent_at,
            row.sha256,
            row.attempts,
        )

    @property
    def title(self) -> str:
        """Its file name, or what it is ("image", "voice message") when it has none."""
        return self.name or KIND_LABELS.get(self.kind, self.kind)


def size_text(size: int | None) -> str:
    if size is None:
        return ""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{round(size / 1024)} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def described(info: dict[str, Any], *, quoted: bool = False) -> str:
    """`a.pdf (120 KB, PDF, 3 pages)` from a record's `payload["attachment"]` (`quoted`:
    `'a.pdf' (...)`, where it stands in a sentence)."""
    name = str(info.get("name") or KIND_LABELS.get(str(info.get("kind")), "file"))
    name = repr(name) if quoted else name
    size = info.get("size")
    label = KIND_LABELS.get(str(info.get("kind") or ""), "")
    parts = [
        size_text(size if isinstance(size, int) else None),
        "" if label == str(info.get("name")) else label,  # not "image (image)"
        str(info.get("detail") or ""),
    ]
    facts = ", ".join(p for p in parts if p)
    return f"{name} ({facts})" if facts else name


def attachment_of(payload: Any) -> dict[str, Any] | None:
    """The `attachment` part of a record's payload, when the record is an attachment's."""
    info = payload.get("attachment") if isinstance(payload, dict) else None
    return info if isinstance(info, dict) else None


async def write_record(
    tx: AsyncSession,
    att: Attached,
    *,
    text: str,
    kind: str,
    detail: str,
    size: int | None,
    sha256: str | None,
    now: datetime,
) -> int:
    """Write the attachment's record (or find it, written before); its seq."""
    payload: dict[str, Any] = {
        "attachment": {
            "name": att.title,
            "size": size,
            "kind": kind,
            "sha256": sha256,
            "detail": detail,
            "error": None,
        },
        "parent": att.message_id,
    }
    if att.chat_id:
        payload["chat_id"] = att.chat_id
    record = NewRecord(
        source=att.source,
        external_id=attachments.record_external_id(att.message_id, att.resource_key),
        scope=att.scope,
        text=text,
        sent_at=att.sent_at,
        author=att.author,
        title=att.title,
        payload=payload,
    )
    new = await source_records.insert_records(tx, [record], now)
    if new:
        return new[0][0]
    found = await tx.scalar(
        select(SourceRecord.id).where(
            SourceRecord.source == record.source, SourceRecord.external_id == record.external_id
        )
    )
    assert found is not None, "insert said the record existed"
    return int(found)


async def finish(
    tx: AsyncSession,
    att: Attached,
    owner: str,
    *,
    text: str,
    kind: str,
    detail: str = "",
    size: int | None = None,
    sha256: str | None = None,
    now: datetime,
) -> bool:
    """The attachment's record written and its row DONE, in the caller's transaction; False
    when the row is no longer ours (recalled, or taken over): then roll back."""
    record_id = await write_record(
        tx, att, text=text, kind=kind, detail=detail, size=size, sha256=sha256, now=now
    )
    return await attachments.move(
        tx, att.id, owner, state=attachments.DONE, now=now, record_id=record_id
    )
