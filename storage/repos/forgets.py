"""Forgetting: what the owner asked the assistant to forget (`forget_requests`), which records
that covers, and removing what cites them.

A request names a source, a chat, a person and/or a date range (all given must hold). It is
carried out in batches of records in seq order; each batch commits its removals together with
the request's `cursor`, so a crash or a failed batch resumes after the last committed one.
Records go the way recalled messages go (storage/repos/source_records.py `remove_records`): the row
and its text are deleted and a content-free tombstone takes its key, so the search follower
deletes the document on every replica and a later sync cannot bring the record back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Text,
    and_,
    cast,
    delete,
    func,
    not_,
    or_,
    select,
    tuple_,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from storage.claims import NOW, claim
from storage.models import (
    Attachment,
    AttachmentBlob,
    Finding,
    ForgetRequest,
    NotebookNote,
    Source,
)
from storage.models import SourceRecord as Rec
from storage.repos._like import escape_like

PENDING, DONE, PARKED = "pending", "done", "parked"
PARK_AFTER = 5
ERROR_CHARS = 2000


@dataclass(frozen=True)
class Selector:
    """What to forget; every field given must match a record."""

    source: str | None = None  # a source name (`email:INBOX`) or kind (`email`, `docs`)
    chat: str | None = None  # a chat id (`oc_…`) or its name
    person: str | None = None  # an open_id or an email address: the record's author
    since: datetime | None = None  # sent at or after
    until: datetime | None = None  # sent before

    @property
    def empty(self) -> bool:
        return not (self.source or self.chat or self.person or self.since or self.until)

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("since", "until"):
            data[key] = data[key].isoformat() if data[key] else None
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Selector:
        def when(key: str) -> datetime | None:
            return datetime.fromisoformat(data[key]) if data.get(key) else None

        return cls(
            source=data.get("source"),
            chat=data.get("chat"),
            person=data.get("person"),
            since=when("since"),
            until=when("until"),
        )

    def describe(self) -> str:
        parts = [
            f"source {self.source}" if self.source else "",
            f"chat {self.chat}" if self.chat else "",
            f"person {self.person}" if self.person else "",
            f"from {self.since:%Y-%m-%d}" if self.since else "",
            f"before {self.until:%Y-%m-%d}" if self.until else "",
        ]
        return ", ".join(p for p in parts if p)


async def titled(tx: AsyncSession, sel: Selector) -> list[str]:
    """The sources whose title is the selector's chat (a chat named, not given by its id)."""
    if not sel.chat:
        return []
    return list((await tx.scalars(select(Source.name).where(Source.title == sel.chat))).all())


def naming(column: Any, sel: Selector, titled: Sequence[str]) -> list[ColumnElement[bool]]:
    """The conditions the selector's source and chat set on a source-name column (a record's
    source, or a sources row's name); `titled` is `titled(tx, sel)`."""
    where: list[ColumnElement[bool]] = []
    if sel.source:
        where.append(
            or_(column == sel.source, column.like(f"{escape_like(sel.source)}:%", escape="\\"))
        )
    if sel.chat:
        # A chat's sources end in its id (`feishu:oc_x`, `chats:oc_x`); by name, their title.
        where.append(
            or_(column.like(f"%:{escape_like(sel.chat)}", escape="\\"), column.in_(list(titled)))
        )
    return where


async def _where(tx: AsyncSession, sel: Selector) -> list[ColumnElement[bool]]:
    if sel.empty:
        raise ValueError("a forget needs a source, chat, person or date range")
    where = naming(Rec.source, sel, await titled(tx, sel))
    if sel.person:
        # An open_id is the whole author; a mail's sender may be `Name <address>`.
        where.append(
            or_(Rec.author == sel.person, Rec.author.contains(f"<{sel.person}>", autoescape=True))
        )
    if sel.since:
        where.append(Rec.sent_at >= sel.since)
    if sel.until:
        where.append(Rec.sent_at < sel.until)
    return where


# A tombstone has no text and no time; counting them as "to remove" would mislead.
_NOT_TOMBSTONE = not_(and_(Rec.text == "", Rec.sent_at.is_(None), Rec.author.is_(None)))


async def count_matching(tx: AsyncSession, sel: Selector) -> dict[str, int]:
    """What a forget of `sel` would remove now: its records and their attachments (what
    cites them is found as each batch goes)."""
    where = [*await _where(tx, sel), _NOT_TOMBSTONE]
    records = int(await tx.scalar(select(func.count(Rec.id)).where(*where)) or 0)
    of_them = or_(
        Attachment.record_id.in_(select(Rec.id).where(*where)),
        tuple_(Attachment.source, Attachment.message_id).in_(
            select(Rec.source, Rec.external_id).where(*where)
        ),
    )
    attachments = int(await tx.scalar(select(func.count(Attachment.id)).where(of_them)) or 0)
    return {"records": records, "attachments": attachments}


async def matching_after(tx: AsyncSession, sel: Selector, after: int, limit: int) -> list[Rec]:
    """The next records (tombstones included: the caller skips them) in seq order."""
    stmt = select(Rec).where(Rec.id > after, *await _where(tx, sel))
    return list((await tx.scalars(stmt.order_by(Rec.id).limit(limit))).all())


async def drop_attachments(tx: AsyncSession, records: Sequence[Rec]) -> tuple[int, int]:
    """The attachments of these records (their own `#att:` records, or the message they
    belong to), and each blob no remaining attachment uses: (attachments, blobs) removed."""
    if not records:
        return 0, 0
    seqs = [r.id for r in records]
    keys = [(r.source, r.external_id) for r in records]
    of_them = or_(
        Attachment.record_id.in_(seqs),
        *(and_(Attachment.source == s, Attachment.message_id == e) for s, e in keys),
    )
    rows = (await tx.execute(select(Attachment.id, Attachment.sha256).where(of_them))).all()
    if not rows:
        return 0, 0
    await tx.execute(delete(Attachment).where(Attachment.id.in_([r.id for r in rows])))
    shas = {r.sha256 for r in rows if r.sha256}
    if not shas:
        return len(rows), 0
    used = set(
        (await tx.scalars(select(Attachment.sha256).where(Attachment.sha256.in_(shas)))).all()
    )
    unused = sorted(shas - used)
    if unused:
        await tx.execute(delete(AttachmentBlob).where(AttachmentBlob.sha256.in_(unused)))
    return len(rows), len(unused)


async def drop_notes(tx: AsyncSession, seqs: Sequence[int]) -> list[int]:
    """Notebook notes citing any of these records (`rec-N` in their refs): deleted, as a
    note's words may repeat what the record said. Their ids."""
    if not seqs:
        return []
    ids = list(
        (
            await tx.scalars(
                select(NotebookNote.id).where(_cites(NotebookNote.refs, [f"rec-{s}" for s in seqs]))
            )
        ).all()
    )
    if ids:
        await tx.execute(delete(NotebookNote).where(NotebookNote.id.in_(ids)))
    return ids


def _cites(refs: Any, wanted: Sequence[str]) -> ColumnElement[bool]:
    as_text = cast(refs, Text)
    # Quoted: the JSON list holds `"rec-12"`, and `rec-1` must not match it.
    return or_(*(as_text.like(f'%"{ref}"%') for ref in wanted))


WITHDRAWN_FINDING = "(withdrawn: it cited something the owner had forgotten)"


async def withdraw_findings(
    tx: AsyncSession, seqs: Sequence[int], note_ids: Sequence[int]
) -> list[int]:
    """Discovery's findings citing these records or notes: their text and refs go (the row
    stays: the owner's feedback and the repeat check point at it), and one not told yet
    never is (`unsent`). Their ids, for the caller to redact where each was told."""
    wanted = [f"rec-{s}" for s in seqs] + [f"note-{n}" for n in note_ids]
    if not wanted:
        return []
    rows = (
        await tx.execute(
            select(Finding.id, Finding.status).where(
                _cites(Finding.refs, wanted), Finding.text != WITHDRAWN_FINDING
            )
        )
    ).all()
    for row in rows:
        status = "unsent" if row.status == "queued" else row.status
        await tx.execute(
            update(Finding)
            .where(Finding.id == row.id)
            .values(text=WITHDRAWN_FINDING, refs=[], status=status)
        )
    return [int(r.id) for r in rows]


# ---- requests ------------------------------------------------------------------------------


async def create(tx: AsyncSession, sel: Selector, requested_by: str, now: datetime) -> int:
    row = ForgetRequest(
        selector=sel.as_json(),
        requested_by=requested_by,
        status=PENDING,
        cursor=0,
        removed={},
        attempts=0,
        next_attempt_at=now,
        created_at=now,
        updated_at=now,
    )
    tx.add(row)
    await tx.flush()
    return int(row.id)


async def get(tx: AsyncSession, request_id: int) -> ForgetRequest | None:
    return await tx.get(ForgetRequest, request_id)


async def recent(tx: AsyncSession, limit: int = 5) -> list[ForgetRequest]:
    stmt = select(ForgetRequest).order_by(ForgetRequest.id.desc()).limit(limit)
    return list((await tx.scalars(stmt)).all())


_DUE = [ForgetRequest.status == PENDING, ForgetRequest.next_attempt_at <= NOW]
_CLAIM = claim(ForgetRequest, _DUE, [ForgetRequest.next_attempt_at, ForgetRequest.id])


async def claim_due(
    tx: AsyncSession, *, owner: str, now: datetime, lease: timedelta
) -> ForgetRequest | None:
    rows = await _CLAIM.take(tx, limit=1, owner=owner, lease=lease, now=now)
    return rows[0] if rows else None


async def advance(
    tx: AsyncSession,
    request_id: int,
    owner: str,
    *,
    cursor: int,
    removed: dict[str, int],
    done: bool,
    now: datetime,
    lease: timedelta,
) -> bool:
    """A batch committed: the cursor moves with it (False: the lease was lost, roll back)."""
    values: dict[str, Any] = {
        "cursor": cursor,
        "removed": removed,
        "attempts": 0,
        "error": None,
        "updated_at": now,
        "lease_expires_at": now + lease,
    }
    if done:
        values.update(status=DONE, done_at=now, lease_owner=None, lease_expires_at=None)
    result = await tx.execute(
        update(ForgetRequest)
        .where(ForgetRequest.id == request_id, ForgetRequest.lease_owner == owner)
        .values(**values)
    )
    return bool(getattr(result, "rowcount", 0))


async def record_failure(
    tx: AsyncSession,
    request_id: int,
    owner: str,
    *,
    error: str,
    now: datetime,
    retry_in: Callable[[int], timedelta],
) -> bool:
    """A batch failed (rolled back): tried again after `retry_in(attempts)` from the cursor
    it had, or parked after PARK_AFTER failures in a row. True when parked."""
    row = await tx.get(ForgetRequest, request_id)
    if row is None or row.lease_owner != owner or row.status != PENDING:
        return False
    attempts = row.attempts + 1
    parked = attempts >= PARK_AFTER
    await tx.execute(
        update(ForgetRequest)
        .where(ForgetRequest.id == request_id)
        .values(
            attempts=attempts,
            error=error[:ERROR_CHARS],
            status=PARKED if parked else PENDING,
            next_attempt_at=None if parked else now + retry_in(attempts),
            lease_owner=None,
            lease_expires_at=None,
            updated_at=now,
        )
    )
    return parked
