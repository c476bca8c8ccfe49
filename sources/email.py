"""Email over IMAP, read-only: mailboxes are opened with EXAMINE and messages fetched with
BODY.PEEK, so nothing we do can set \\Seen; nothing here sends mail (an assistant that answers
its own mail is a known failure of similar bots: mail goes out only as an action the owner
approved, bot/actions/mail.py, which uses `imap_login` to look in Sent and file its copy).

Units are mailboxes (`email:<mailbox>`, scope `mail:<mailbox>`). A mailbox's cursor is

    {"uidvalidity": V, "last_uid": U, "since": "2024-05-01T00:00:00+00:00" | null, "resyncs": n}

and a sync reads the UIDs above U that were there when it began, 50 at a time, each batch
committed with the cursor after it. When the server's UIDVALIDITY changes, the mailbox is read
again from the start; records are keyed by a hash of the Message-ID (or of the main headers
when a mail has none), so the second reading adds no duplicates.

`imaplib` is blocking: every IMAP exchange runs in a worker thread (`asyncio.to_thread`), one
connection per observation or mailbox sync.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import imaplib
import logging
import re
import ssl
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sources.base import (
    Cursor,
    FileOf,
    Observation,
    Page,
    SourceError,
    SyncRequest,
    Unit,
    UnitState,
)
from sources.mime import ParsedMail, parse_mail
from storage.repos.attachments import EXTRACT, NewAttachment
from storage.repos.source_records import NewRecord

log = logging.getLogger(__name__)

KIND = "email"
MAIL_PLATFORM = "mail"  # attachments.platform of a mail's files
BATCH = 50
LARGE_MAIL_BYTES = 2 * 1024 * 1024  # larger mails: only their first 2 MiB are fetched
FETCH_BYTES = 8 * 1024 * 1024  # mail bodies asked for in one FETCH, about
MAX_REFERENCES = 50
SECURITIES = ("ssl", "starttls", "none")


def source_name(mailbox: str) -> str:
    return f"{KIND}:{mailbox}"


def mail_scope(mailbox: str) -> str:
    return f"mail:{mailbox}"


@dataclass(frozen=True)
class ImapSettings:
    host: str
    port: int
    security: str  # ssl | starttls | none
    user: str
    password: str
    mailboxes: tuple[str, ...] = ("INBOX",)
    timeout: float = 30.0

    def __post_init__(self) -> None:
        if self.security not in SECURITIES:
            raise ValueError(f"security must be one of {', '.join(SECURITIES)}")

    @property
    def where(self) -> str:
        return f"{self.user}@{self.host}:{self.port} ({self.security})"

    def __repr__(self) -> str:  # never show the password
        return f"ImapSettings({self.where}, mailboxes={list(self.mailboxes)})"


# ---- IMAP details ------------------------------------------------------------------------


def imap_utf7(name: str) -> str:
    """A mailbox name in IMAP's modified UTF-7 (RFC 3501 5.1.3)."""
    out: list[str] = []
    pending: list[str] = []

    def flush() -> None:
        if pending:
            encoded = base64.b64encode("".join(pending).encode("utf-16-be")).decode()
            out.append("&" + encoded.rstrip("=").replace("/", ",") + "-")
            pending.clear()

    for ch in name:
        if 0x20 <= ord(ch) <= 0x7E:
            flush()
            out.append("&-" if ch == "&" else ch)
        else:
            pending.append(ch)
    flush()
    return "".join(out)


def quote_mailbox(name: str) -> str:
    return '"' + imap_utf7(name).replace("\\", "\\\\").replace('"', '\\"') + '"'


def text_of(data: Any) -> str:
    """An imaplib answer (bytes, lists of them) as text, for an error line."""
    if isinstance(data, bytes):
        return data.decode("utf-8", "replace")
    if isinstance(data, list | tuple):
        return " ".join(text_of(d) for d in data if d is not None)
    return str(data)


_STATUS_ITEM = re.compile(rb"(UIDVALIDITY|UIDNEXT|MESSAGES|UNSEEN) (\d+)")
_UID = re.compile(rb"UID (\d+)")
_SIZE = re.compile(rb"RFC822\.SIZE (\d+)")
_FLAGS = re.compile(rb"FLAGS \(([^)]*)\)")
_INTERNALDATE = re.compile(rb'INTERNALDATE "([^"]+)"')


@dataclass(frozen=True)
class Meta:
    size: int
    flags: tuple[str, ...]
    internal_date: datetime | None


def imap_login(s: ImapSettings) -> imaplib.IMAP4:
    """A blocking IMAP connection, logged in; SourceError in one line when it cannot be."""
    context = ssl.create_default_context()
    try:
        if s.security == "ssl":
            conn: imaplib.IMAP4 = imaplib.IMAP4_SSL(
                s.host, s.port, ssl_context=context, timeout=s.timeout
            )
        else:
            conn = imaplib.IMAP4(s.host, s.port, timeout=s.timeout)
            if s.security == "starttls":
                conn.starttls(ssl_context=context)
    except (OSError, imaplib.IMAP4.error, ssl.SSLError) as exc:
        raise SourceError(f"cannot connect to {s.host}:{s.port} ({s.security}): {exc}") from None
    try:
        conn.login(s.user, s.password)
    except imaplib.IMAP4.error as exc:
        imap_logout(conn)
        raise SourceError(
            f"login as {s.user} at {s.host}:{s.port} failed: {text_of(exc.args)}"
        ) from None
    except OSError as exc:
        imap_logout(conn)
        raise SourceError(f"login at {s.host}:{s.port} failed: {exc}") from None
    return conn


def imap_logout(conn: imaplib.IMAP4) -> None:
    try:
        conn.logout()
    except (OSError, imaplib.IMAP4.error, ssl.SSLError):
        pass


class ImapSession:
    """One blocking IMAP connection, logged in; read-only by construction: it offers only
    STATUS, EXAMINE, UID SEARCH and UID FETCH of BODY.PEEK."""

    def __init__(self, settings: ImapSettings) -> None:
        self.settings = settings
        self.conn = imap_login(settings)

    def status(self, mailbox: str) -> dict[str, int]:
        typ, data = self.conn.status(
            quote_mailbox(mailbox), "(UIDVALIDITY UIDNEXT MESSAGES UNSEEN)"
        )
        if typ != "OK":
            raise SourceError(f"mailbox {mailbox!r}: {text_of(data)}")
        found = _STATUS_ITEM.findall(b" ".join(d for d in data if isinstance(d, bytes)))
        return {k.decode().lower(): int(v) for k, v in found}

    def examine(self, mailbox: str) -> tuple[int, int]:
        """Open read-only (EXAMINE); (UIDVALIDITY, message count)."""
        typ, data = self.conn.select(quote_mailbox(mailbox), readonly=True)
        if typ != "OK":
            raise SourceError(f"cannot open mailbox {mailbox!r}: {text_of(data)}")
        _, values = self.conn.response("UIDVALIDITY")
        if not values or values[0] is None:
            raise SourceError(f"mailbox {mailbox!r}: the server sent no UIDVALIDITY")
        return int(values[-1]), int(data[0] or 0)

    def search(self, first_uid: int, last_uid: int | None, since: datetime | None) -> list[int]:
        """UIDs in [first_uid, last_uid] (open-ended when None), optionally received SINCE a
        day, ascending."""
        criteria = f"UID {first_uid}:{last_uid if last_uid is not None else '*'}"
        if since is not None:
            criteria = f"SINCE {since.strftime('%d-%b-%Y')} {criteria}"
        typ, data = self.conn.uid("SEARCH", criteria)
        if typ != "OK":
            raise SourceError(f"search failed: {text_of(data)}")
        uids = sorted({int(u) for u in b" ".join(d for d in data if d).split()})
        # "n:*" always matches the highest UID, even when it is below n
        return [u for u in uids if u >= first_uid and (last_uid is None or u <= last_uid)]

    def meta(self, uids: Sequence[int]) -> dict[int, Meta]:
        typ, data = self.conn.uid(
            "FETCH", ",".join(map(str, uids)), "(UID RFC822.SIZE FLAGS INTERNALDATE)"
        )
        if typ != "OK":
            raise SourceError(f"fetch failed: {text_of(data)}")
        out: dict[int, Meta] = {}
        for item in data:
            line = item[0] if isinstance(item, tuple) else item
            if not isinstance(line, bytes) or not (uid := _UID.search(line)):
                continue
            size, flags, when = _SIZE.search(line), _FLAGS.search(line), _INTERNALDATE.search(line)
            out[int(uid.group(1))] = Meta(
                int(size.group(1)) if size else 0,
                tuple(flags.group(1).decode().split()) if flags else (),
                _internal_date(when.group(1).decode()) if when else None,
            )
        return out

    def bodies(self, uids: Sequence[int], limit: int | None = None) -> dict[int, bytes]:
        """Whole messages (or their first `limit` bytes), with BODY.PEEK: no \\Seen."""
        if not uids:
            return {}
        section = "BODY.PEEK[]" if limit is None else f"BODY.PEEK[]<0.{limit}>"
        typ, data = self.conn.uid("FETCH", ",".join(map(str, uids)), f"(UID {section})")
        if typ != "OK":
            raise SourceError(f"fetch failed: {text_of(data)}")
        out: dict[int, bytes] = {}
        for item in data:
            if isinstance(item, tuple) and len(item) == 2 and (uid := _UID.search(item[0])):
                out[int(uid.group(1))] = item[1]
        return out

    def close(self) -> None:
        imap_logout(self.conn)


def _internal_date(value: str) -> datetime | None:
    try:
        return datetime.strptime(value, "%d-%b-%Y %H:%M:%S %z").astimezone(UTC)
    except ValueError:
        return None


# ---- cursor -----------------------------------------------------------------------------


@dataclass
class MailCursor:
    uidvalidity: int | None = None
    last_uid: int = 0
    since: datetime | None = None  # how far back the stored copy reaches (None: all of it)
    resyncs: int = 0

    @classmethod
    def load(cls, data: Cursor | None) -> MailCursor:
        data = data or {}
        since = data.get("since")
        return cls(
            int(data["uidvalidity"]) if data.get("uidvalidity") is not None else None,
            int(data.get("last_uid") or 0),
            datetime.fromisoformat(since) if since else None,
            int(data.get("resyncs") or 0),
        )

    def dump(self) -> Cursor:
        return {
            "uidvalidity": self.uidvalidity,
            "last_uid": self.last_uid,
            "since": self.since.isoformat() if self.since else None,
            "resyncs": self.resyncs,
        }


# ---- the adapter --------------------------------------------------------------------------


class EmailSource:
    kind = KIND

    def __init__(
        self,
        settings: ImapSettings,
        *,
        batch: int = BATCH,
        max_attachment_bytes: int | None = None,
    ) -> None:
        self.settings = settings
        self.batch = batch
        # Attachments up to this size are kept, to be read into text; None: none are.
        self.max_attachment_bytes = max_attachment_bytes

    async def aclose(self) -> None:
        pass

    async def observe(self) -> Observation:
        return await asyncio.to_thread(self._observe)

    def _observe(self) -> Observation:
        imap = ImapSession(self.settings)
        try:
            now = datetime.now(UTC).isoformat()
            units = []
            for mailbox in self.settings.mailboxes:
                try:
                    status = imap.status(mailbox)
                    units.append(
                        Unit(
                            source_name(mailbox),
                            mail_scope(mailbox),
                            mailbox,
                            {**status, "present": True, "observed_at": now},
                        )
                    )
                except (SourceError, imaplib.IMAP4.error) as exc:
                    units.append(
                        Unit(
                            source_name(mailbox),
                            mail_scope(mailbox),
                            mailbox,
                            {"present": False, "observed_at": now},
                            error=str(exc),
                        )
                    )
        finally:
            imap.close()
        cursor = {
            "server": f"{self.settings.host}:{self.settings.port}",
            "user": self.settings.user,
            "mailboxes": len(units),
            "observed_at": now,
        }
        return Observation(units, cursor)

    async def sync(self, unit: UnitState, request: SyncRequest) -> AsyncGenerator[Page, None]:
        mailbox = unit.name.split(":", 1)[1]
        imap = await asyncio.to_thread(ImapSession, self.settings)
        try:
            async for page in self._sync(imap, mailbox, unit, request):
                yield page
        finally:
            await asyncio.to_thread(imap.close)

    async def _sync(
        self, imap: ImapSession, mailbox: str, unit: UnitState, request: SyncRequest
    ) -> AsyncIterator[Page]:
        cursor = MailCursor.load(unit.synced_cursor)
        uidvalidity, _count = await asyncio.to_thread(imap.examine, mailbox)
        if cursor.uidvalidity is not None and cursor.uidvalidity != uidvalidity:
            log.warning(
                "%s: UIDVALIDITY changed (%s -> %s): reading the mailbox again",
                unit.name,
                cursor.uidvalidity,
                uidvalidity,
            )
            cursor = MailCursor(resyncs=cursor.resyncs + 1, since=cursor.since)
        cursor.uidvalidity = uidvalidity
        backfill: list[int] = []
        if cursor.last_uid == 0:
            since = request.since or cursor.since
            fresh = await asyncio.to_thread(imap.search, 1, None, since)
            cursor.since = since
        else:
            fresh = await asyncio.to_thread(imap.search, cursor.last_uid + 1, None, None)
            if (
                request.since is not None
                and cursor.since is not None
                and request.since < cursor.since
            ):
                backfill = await asyncio.to_thread(imap.search, 1, cursor.last_uid, request.since)
        total = len(backfill) + len(fresh)
        for start in range(0, len(backfill), self.batch):
            uids = backfill[start : start + self.batch]
            records, files = await asyncio.to_thread(self._read, imap, mailbox, uidvalidity, uids)
            yield Page(records, None, total, files)  # the cursor moves once the backfill is whole
        if backfill:
            cursor.since = request.since
        for start in range(0, len(fresh), self.batch):
            uids = fresh[start : start + self.batch]
            records, files = await asyncio.to_thread(self._read, imap, mailbox, uidvalidity, uids)
            cursor.last_uid = max(cursor.last_uid, uids[-1])
            yield Page(records, cursor.dump(), total, files)
        yield Page([], cursor.dump(), total)

    def _read(
        self, imap: ImapSession, mailbox: str, uidvalidity: int, uids: list[int]
    ) -> tuple[list[NewRecord], list[FileOf]]:
        meta = imap.meta(uids)
        large = {u for u in uids if u in meta and meta[u].size > LARGE_MAIL_BYTES}
        raw: dict[int, bytes] = {}
        group: list[int] = []
        group_bytes = 0
        for uid in [u for u in uids if u in meta]:  # one FETCH per FETCH_BYTES or so
            size = min(meta[uid].size, LARGE_MAIL_BYTES)
            if group and group_bytes + size > FETCH_BYTES:
                raw.update(_split_bodies(imap, group, large))
                group, group_bytes = [], 0
            group.append(uid)
            group_bytes += size
        raw.update(_split_bodies(imap, group, large))
        records, files = [], []
        for uid in uids:
            if uid not in raw:  # expunged meanwhile
                continue
            truncated = uid in large
            parsed = parse_mail(
                raw[uid], truncated=truncated, keep_bytes_up_to=self.max_attachment_bytes
            )
            record = mail_record(mailbox, uidvalidity, uid, parsed, meta[uid], truncated)
            records.append(record)
            files.extend(mail_files(record, parsed))
        return records, files


def _split_bodies(imap: ImapSession, uids: list[int], large: set[int]) -> dict[int, bytes]:
    out = imap.bodies([u for u in uids if u not in large])
    out.update(imap.bodies([u for u in uids if u in large], LARGE_MAIL_BYTES))
    return out


def mail_record(
    mailbox: str,
    uidvalidity: int,
    uid: int,
    mail: ParsedMail,
    meta: Meta,
    truncated: bool,
) -> NewRecord:
    payload: dict[str, Any] = {
        "mailbox": mailbox,
        "uidvalidity": uidvalidity,
        "uid": uid,
        "message_id": mail.message_id,
        "in_reply_to": mail.in_reply_to,
        "references": mail.references[-MAX_REFERENCES:],
        "from": mail.sender,
        "to": mail.to,
        "cc": mail.cc,
        "date": mail.date.isoformat() if mail.date else None,
        "flags": list(meta.flags),
        "size": meta.size,
        "attachments": [
            {"name": a.name, "size": a.size, "content_type": a.content_type}
            for a in mail.attachments
        ],
    }
    if mail.reply_to:
        payload["reply_to"] = mail.reply_to
    if mail.html_only:
        payload["html_only"] = True
    if truncated or mail.text_truncated:
        payload["truncated"] = True
    return NewRecord(
        source=source_name(mailbox),
        external_id=mail.key,
        scope=mail_scope(mailbox),
        text=mail.text,
        sent_at=mail.date or meta.internal_date,
        author=mail.sender,
        title=mail.subject or None,
        thread_key=mail.thread_key,
        payload=payload,
    )


def mail_files(record: NewRecord, mail: ParsedMail) -> list[FileOf]:
    """The mail's attachments that were kept, as rows ready to be read (state `extract`: the
    bytes come with the mail), keyed by their position among the mail's attachments."""
    files = []
    for index, part in enumerate(mail.attachments):
        if part.data is None:
            continue
        row = NewAttachment(
            platform=MAIL_PLATFORM,
            message_id=record.external_id,
            resource_key=str(index),
            source=record.source,
            scope=record.scope,
            kind="mail",
            name=part.name,
            declared_size=len(part.data),
            author=record.author,
            sent_at=record.sent_at,
            state=EXTRACT,
            sha256=hashlib.sha256(part.data).hexdigest(),
        )
        files.append(FileOf(row, part.data))
    return files


def default_port(security: str) -> int:
    return 993 if security == "ssl" else 143


__all__ = [
    "KIND",
    "EmailSource",
    "ImapSession",
    "ImapSettings",
    "MailCursor",
    "default_port",
    "imap_login",
    "imap_logout",
    "imap_utf7",
    "mail_scope",
    "quote_mailbox",
    "source_name",
    "text_of",
]
