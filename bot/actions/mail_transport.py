"""The mail servers, for the mail actions: SMTP to send (the stdlib's smtplib, in a worker
thread) and the mailbox's Sent folder over IMAP (the email source's login, sources/email.py)
to look for a Message-ID before sending and to file a copy after.

`deliver` is the exactly-once step: with a mailbox configured, a mail whose Message-ID is in
Sent already is not sent again. Once SMTP has accepted a mail nothing raises any more (a
raise would be retried and could send it twice): a copy that cannot be filed in Sent is
said in the result line instead.
"""

from __future__ import annotations

import imaplib
import re
import smtplib
import ssl
import time
from dataclasses import dataclass
from email.message import EmailMessage

from bot.config import Settings, SmtpSecurity, reveal
from sources.base import SourceError
from sources.email import ImapSettings, imap_login, imap_logout, quote_mailbox, text_of

SENT = "Sent"  # the Sent folder's name when no mailbox says it is \Sent (RFC 6154)
NOT_CONFIGURED = "email cannot be sent: set MAKA_SMTP_HOST (and MAKA_SMTP_FROM, MAKA_SMTP_*)"
_LIST = re.compile(rb'^\((?P<flags>[^)]*)\) (?:"(?:[^"\\]|\\.)*"|NIL) (?P<name>.+)$')


class MailRefused(Exception):
    """The SMTP server refused the mail for good (5xx): str(exc) is the one line."""


@dataclass(frozen=True)
class SmtpSettings:
    host: str
    port: int
    security: SmtpSecurity
    username: str | None
    password: str | None
    sender: str  # the From address
    timeout: float = 30.0

    @property
    def where(self) -> str:
        return f"{self.host}:{self.port} ({self.security.value})"

    def __repr__(self) -> str:  # never show the password
        return f"SmtpSettings({self.where}, from {self.sender})"


def smtp_settings(settings: Settings) -> SmtpSettings | None:
    sender = settings.resolved_smtp_from
    if not settings.smtp_host or not sender:
        return None
    return SmtpSettings(
        host=settings.smtp_host,
        port=settings.resolved_smtp_port,
        security=settings.smtp_tls,
        username=settings.smtp_username,
        password=reveal(settings.smtp_password),
        sender=sender,
    )


def _smtp(s: SmtpSettings) -> smtplib.SMTP:
    """Connected, TLS as configured, logged in when a username is set."""
    context = ssl.create_default_context()
    if s.security is SmtpSecurity.TLS:
        conn: smtplib.SMTP = smtplib.SMTP_SSL(s.host, s.port, timeout=s.timeout, context=context)
    else:
        conn = smtplib.SMTP(s.host, s.port, timeout=s.timeout)
    try:
        conn.ehlo()
        if s.security is SmtpSecurity.STARTTLS:
            conn.starttls(context=context)
            conn.ehlo()
        if s.username:
            conn.login(s.username, s.password or "")
    except BaseException:
        conn.close()
        raise
    return conn


def _quit(conn: smtplib.SMTP) -> None:
    try:
        conn.quit()
    except (OSError, smtplib.SMTPException):
        conn.close()


def _permanent(exc: smtplib.SMTPException) -> str | None:
    """The one line of a 5xx refusal; None for what may pass (4xx, a dropped connection)."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        codes = {to: code for to, (code, _) in exc.recipients.items()}
        if codes and all(500 <= c < 600 for c in codes.values()):
            shown = ", ".join(f"{to} ({c})" for to, c in list(codes.items())[:3])
            return f"the mail server refused the recipient(s): {shown}"
        return None
    if isinstance(exc, smtplib.SMTPResponseException) and 500 <= exc.smtp_code < 600:
        said = (
            exc.smtp_error.decode("utf-8", "replace") if isinstance(exc.smtp_error, bytes) else ""
        )
        return f"the mail server refused it: {exc.smtp_code} {' '.join(said.split())}"[:300]
    return None


def smtp_send(s: SmtpSettings, message: EmailMessage) -> str:
    """Send, or raise: MailRefused (5xx) for good, anything else to be tried again. Sent to
    some recipients only: "; refused: …" for the others (sending again would repeat it to
    those who got it)."""
    try:
        conn = _smtp(s)
        try:
            refused = conn.send_message(message)
        finally:
            _quit(conn)
    except smtplib.SMTPException as exc:
        line = _permanent(exc)
        if line is not None:
            raise MailRefused(line) from None
        raise
    shown = ", ".join(f"{to} ({code})" for to, (code, _) in list(refused.items())[:3])
    return f"; refused: {shown}" if refused else ""


def smtp_check(s: SmtpSettings) -> str:
    """Connect and log in (`maka doctor`); the one line, or raises."""
    _quit(_smtp(s))
    login = f" as {s.username}" if s.username else " (no login)"
    return f"{s.where}{login}, sending from {s.sender}"


# ---- the Sent folder ----------------------------------------------------------------------


def sent_folder(conn: imaplib.IMAP4) -> str:
    """The Sent folder as the server names it (quoted for a command): the mailbox flagged
    \\Sent (RFC 6154 SPECIAL-USE), else "Sent"."""
    typ, data = conn.list()
    if typ == "OK":
        for item in data:
            m = _LIST.match(item) if isinstance(item, bytes) else None
            if m and b"\\sent" in m.group("flags").lower().split():
                name = m.group("name").strip()
                return name.decode() if name.startswith(b'"') else f'"{name.decode()}"'
    return quote_mailbox(SENT)


def in_sent(conn: imaplib.IMAP4, folder: str, message_id: str) -> bool:
    typ, _ = conn.select(folder, readonly=True)
    if typ != "OK":  # no Sent folder yet: nothing was filed there
        return False
    typ, data = conn.uid("SEARCH", "HEADER", "Message-ID", f'"{message_id}"')
    if typ != "OK":
        raise SourceError(f"search of the Sent folder failed: {text_of(data)}")
    return any(d and d.split() for d in data if isinstance(d, bytes))


def file_in_sent(conn: imaplib.IMAP4, folder: str, raw: bytes) -> None:
    """APPEND as read (\\Seen); the folder is made when the server says TRYCREATE."""
    when = imaplib.Time2Internaldate(time.time())
    typ, data = conn.append(folder, "(\\Seen)", when, raw)
    if typ != "OK" and "TRYCREATE" in text_of(data).upper():
        conn.create(folder)
        typ, data = conn.append(folder, "(\\Seen)", when, raw)
    if typ != "OK":
        raise SourceError(f"APPEND to {folder} failed: {text_of(data)}")


def _found_in_sent(imap: ImapSettings, message_id: str) -> bool:
    conn = imap_login(imap)
    try:
        return in_sent(conn, sent_folder(conn), message_id)
    finally:
        imap_logout(conn)


def _file(imap: ImapSettings, message: EmailMessage, message_id: str) -> str:
    """After SMTP accepted it: a copy in Sent unless the server filed one itself; never
    raises (what went wrong is said instead)."""
    try:
        conn = imap_login(imap)
        try:
            folder = sent_folder(conn)
            if in_sent(conn, folder, message_id):
                return "the server filed it in Sent"
            file_in_sent(conn, folder, message.as_bytes())
            return f"filed in {folder.strip(chr(34))}"
        finally:
            imap_logout(conn)
    except (SourceError, OSError, imaplib.IMAP4.error, ssl.SSLError) as exc:
        return f"not filed in Sent ({exc})"


def deliver(smtp: SmtpSettings, imap: ImapSettings | None, message: EmailMessage) -> str:
    """Send `message` once (blocking): the one-line result. With a mailbox, its Message-ID
    is looked for in Sent first, on every attempt: found, it was sent before."""
    message_id = str(message["Message-ID"])
    if imap is not None and _found_in_sent(imap, message_id):
        return f"already sent: {message_id} is in the Sent folder"
    refused = smtp_send(smtp, message)
    filed = f"; {_file(imap, message, message_id)}" if imap is not None else ""
    return f"sent to {message['To']} as {message_id}{refused}{filed}"
