"""Attachments: the resources messages and mails carry, as work items, and their content.

A row's life: `fetch` (its bytes are to be downloaded: a Feishu resource) → `extract` (the
bytes are stored in `attachment_blobs`; a mail's part starts here) → `done` (its text is a
source record, `record_id`) or `failed` (it cannot be read: `error` is the one line saying
why, e.g. "could not read: the PDF is encrypted"). A transient failure (Feishu unreachable,
a worker killed) backs the row off (`next_attempt_at`) and after PARK_AFTER attempts parks
it: `parked`, with its error, shown on the status page; the rest goes on. A recalled
message's rows become `recalled` and are never worked on again.

Work is claimed with the one claim (storage/claims.py): a row whose `state` is the wanted
one and whose `next_attempt_at` is due. Content is stored once per SHA-256; its extraction
is kept with it, so the same file sent again is not read again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import String, bindparam, func, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncSession

from storage.claims import NOW, claim, probe
from storage.models import Attachment, AttachmentBlob
from storage.repos._upsert import insert_for

# Published when a row becomes due (ingest, a mail sync, a retry): the workers wake on it.
ATTACHMENTS_TOPIC = "attachments"
FETCH, EXTRACT, DONE, FAILED, PARKED, RECALLED = (
    "fetch",
    "extract",
    "done",
    "failed",
    "parked",
    "recalled",
)
FINAL = frozenset({DONE, FAILED, PARKED, RECALLED})
PARK_AFTER = 5
ERROR_CHARS = 2000


@dataclass(frozen=True, slots=True)
class NewAttachment:
    platform: str
    message_id: str  # the message's external id (Feishu message_id, a mail's external_id)
    resource_key: str  # image_key / file_key, or a mail part's index
    source: str  # the message's source (records: `feishu:<chat_id>`, a mailbox)
    scope: str  # the message's scope: the attachment is seen exactly where the message is
    kind: str  # image | file | audio | media | mail
    name: str
    chat_id: str | None = None
    declared_size: int | None = None
    duration_ms: int | None = None
    author: str | None = None
    sent_at: datetime | None = None
    state: str = FETCH
    sha256: str | None = None  # set with state EXTRACT when the bytes are stored already

    def row(self, now: datetime) -> dict[str, Any]:
        return {
            "platform": self.platform,
            "message_id": self.message_id,
            "resource_key": self.resource_key,
            "source": self.source,
            "scope": self.scope,
            "chat_id": self.chat_id,
            "kind": self.kind,
            "name": self.name[:512],
            "declared_size": self.declared_size,
            "duration_ms": self.duration_ms,
            "author": self.author,
            "sent_at": self.sent_at,
            "state": self.state,
            "sha256": self.sha256,
            "attempts": 0,
            "next_attempt_at": now,
            "created_at": now,
            "updated_at": now,
        }


def record_external_id(message_id: str, resource_key: str) -> str:
    """The external id of the source record holding an attachment's text: beside its message's
    (`<message external id>#att:<key>`), so a recall finds it by its message's id."""
    return f"{message_id}#att:{resource_key}"[:200]


async def add_many(tx: AsyncSession, rows: Sequence[NewAttachment], now: datetime) -> None:
    """Insert the rows not there yet (a redelivered message or a second sync adds nothing)."""
    if not rows:
        return
    stmt = insert_for(tx, Attachment).on_conflict_do_nothing(
        index_elements=["platform", "message_id", "resource_key"]
    )
    await tx.execute(stmt, [r.row(now) for r in rows])


# ---- the workers' side -----------------------------------------------------------------------

_DUE = [
    Attachment.state == bindparam("in_state", type_=String()),
    Attachment.next_attempt_at <= NOW,
]
_HAS_DUE = probe(Attachment, _DUE)
_CLAIM_DUE = claim(Attachment, _DUE, [Attachment.next_attempt_at, Attachment.id])
_DUE_ON = [*_DUE, Attachment.platform == bindparam("of_platform", type_=String())]
_HAS_DUE_ON = probe(Attachment, _DUE_ON)
_CLAIM_DUE_ON = claim(Attachment, _DUE_ON, [Attachment.next_attempt_at, Attachment.id])


async def has_due(
    tx: AsyncSession, *, state: str, now: datetime, platform: str | None = None
) -> bool:
    if platform is None:
        return await _HAS_DUE.finds(tx, now=now, in_state=state)
    return await _HAS_DUE_ON.finds(tx, now=now, in_state=state, of_platform=platform)


async def claim_due(
    tx: AsyncSession,
    *,
    state: str,
    owner: str,
    now: datetime,
    limit: int,
    lease: timedelta,
    platform: str | None = None,
) -> list[Attachment]:
    """Due rows in `state` (of `platform`, when given), leased to `owner`."""
    if platform is None:
        return await _CLAIM_DUE.take(
            tx, limit=limit, owner=owner, lease=lease, now=now, in_state=state
        )
    return await _CLAIM_DUE_ON.take(
        tx, limit=limit, owner=owner, lease=lease, now=now, in_state=state, of_platform=platform
    )


async def next_due(tx: AsyncSession, *, state: str) -> datetime | None:
    stmt = select(func.min(Attachment.next_attempt_at)).where(Attachment.state == state)
    result: datetime | None = await tx.scalar(stmt)
    return result


async def move(
    tx: AsyncSession,
    row_id: int,
    owner: str,
    *,
    state: str,
    now: datetime,
    sha256: str | None = None,
    record_id: int | None = None,
    error: str | None = None,
) -> bool:
    """The claimed row goes to `state` (its lease given back); False when `owner` no longer
    holds it (another took it over, or it was recalled meanwhile: then roll back)."""
    values: dict[str, Any] = {
        "state": state,
        "updated_at": now,
        "lease_owner": None,
        "lease_expires_at": None,
        "next_attempt_at": None if state in FINAL else now,
        "attempts": 0 if state not in FINAL else Attachment.attempts,
        "error": error[:ERROR_CHARS] if error else None,
    }
    if sha256 is not None:
        values["sha256"] = sha256
    if record_id is not None:
        values["record_id"] = record_id
    result = await tx.execute(
        update(Attachment)
        .where(
            Attachment.id == row_id,
            Attachment.lease_owner == owner,
            Attachment.state.not_in([RECALLED]),
        )
        .values(**values)
    )
    return bool(getattr(result, "rowcount", 0))


async def record_failure(
    tx: AsyncSession,
    row_id: int,
    owner: str,
    *,
    error: str,
    now: datetime,
    retry_in: Callable[[int], timedelta],
    park_after: int = PARK_AFTER,
) -> bool:
    """A transient failure: tried again after `retry_in(attempts)`, or parked once it has
    failed `park_after` times. True when parked."""
    row = await tx.get(Attachment, row_id)
    if row is None or row.lease_owner != owner or row.state in FINAL:
        return False
    attempts = row.attempts + 1
    parked = attempts >= park_after
    await tx.execute(
        update(Attachment)
        .where(Attachment.id == row_id)
        .values(
            attempts=attempts,
            error=error[:ERROR_CHARS],
            state=PARKED if parked else row.state,
            next_attempt_at=None if parked else now + retry_in(attempts),
            lease_owner=None,
            lease_expires_at=None,
            updated_at=now,
        )
    )
    return parked


# ---- content ---------------------------------------------------------------------------------


async def store_blob(tx: AsyncSession, sha256: str, data: bytes, now: datetime) -> None:
    """The content, once: a second copy of the same bytes adds nothing."""
    stmt = insert_for(tx, AttachmentBlob).on_conflict_do_nothing(index_elements=["sha256"])
    await tx.execute(stmt, [{"sha256": sha256, "size": len(data), "data": data, "created_at": now}])


async def blob(tx: AsyncSession, sha256: str) -> AttachmentBlob | None:
    return await tx.get(AttachmentBlob, sha256)


async def save_extraction(
    tx: AsyncSession,
    sha256: str,
    *,
    kind: str,
    text: str,
    detail: str,
    error: str | None,
    now: datetime,
) -> None:
    await tx.execute(
        update(AttachmentBlob)
        .where(AttachmentBlob.sha256 == sha256)
        .values(kind=kind[:16], text=text, detail=detail[:256], error=error, extracted_at=now)
    )


# ---- readers ---------------------------------------------------------------------------------


async def of_messages(
    tx: AsyncSession, platform: str, message_ids: Sequence[str]
) -> list[Attachment]:
    """The attachments of these messages, in the order they were added."""
    if not message_ids:
        return []
    stmt = (
        select(Attachment)
        .where(Attachment.platform == platform, Attachment.message_id.in_(list(message_ids)))
        .order_by(Attachment.id)
    )
    return list((await tx.scalars(stmt)).all())


async def by_keys(
    tx: AsyncSession, keys: Sequence[tuple[str, str, str]]
) -> dict[tuple[str, str, str], Attachment]:
    """(platform, message_id, resource_key) -> row, for those that exist."""
    if not keys:
        return {}
    stmt = select(Attachment).where(
        tuple_(Attachment.platform, Attachment.message_id, Attachment.resource_key).in_(list(keys))
    )
    rows = (await tx.scalars(stmt)).all()
    return {(r.platform, r.message_id, r.resource_key): r for r in rows}


async def recall(tx: AsyncSession, platform: str, message_id: str, now: datetime) -> list[int]:
    """Its message was recalled: every row of it is `recalled` (a worker holding one loses
    it at `move`). Returns the seqs of the records written for them (to remove)."""
    rows = await of_messages(tx, platform, [message_id])
    await tx.execute(
        update(Attachment)
        .where(Attachment.platform == platform, Attachment.message_id == message_id)
        .values(state=RECALLED, next_attempt_at=None, updated_at=now)
    )
    return [r.record_id for r in rows if r.record_id is not None]


async def counts_by_state(tx: AsyncSession) -> dict[str, int]:
    rows = await tx.execute(
        select(Attachment.state, func.count(Attachment.id)).group_by(Attachment.state)
    )
    return {str(s): int(n) for s, n in rows.all()}


async def parked(tx: AsyncSession, limit: int = 20) -> list[Attachment]:
    stmt = (
        select(Attachment)
        .where(Attachment.state == PARKED)
        .order_by(Attachment.updated_at.desc())
        .limit(limit)
    )
    return list((await tx.scalars(stmt)).all())
