"""Mail action kinds, sent over SMTP from MAKA_SMTP_FROM: `send_email` and `reply_email`
(a reply carries In-Reply-To and References of the mail it answers).

Exactly once: the Message-ID is derived from the ledger row (its id, its idempotency key and
when it was proposed: stable across retries, unlike any other row's, in this database or a
new one), and before every attempt the mailbox's Sent folder is searched for it
(bot/actions/mail_transport.py `deliver`): found, the mail was sent and is not sent again.
A permanent refusal (5xx) fails the action in one line; a 4xx or a server away is raised
and retried by the action worker with backoff, parked after the last try.
"""

from __future__ import annotations

import asyncio
import hashlib
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import formatdate, getaddresses
from typing import Any

from bot.actions.mail_transport import NOT_CONFIGURED, MailRefused, deliver, smtp_settings
from bot.actions.registry import ActionFailed, register_executor
from bot.services import Services
from bot.sync.adapters import imap_settings
from storage.models import Action

SEND, REPLY = "send_email", "reply_email"
MAX_RECIPIENTS = 20
MAX_SUBJECT = 300
MAX_BODY = 100_000
SHOWN_LINES, SHOWN_CHARS = 3, 240  # of the body, in the action's plain words


def _no_line_breaks(value: str, what: str) -> str:
    if "\r" in value or "\n" in value:  # a header with a line break could add headers
        raise ValueError(f"the {what} has a line break")
    return value


def address(entry: str) -> str:
    """One recipient as written ("Li <li@example.com>" or "li@example.com"), checked."""
    _no_line_breaks(entry, "address")
    found = getaddresses([entry])
    if len(found) != 1 or entry.count("@") != 1:
        raise ValueError(f"{entry!r} is not one email address")
    name, addr = found[0]
    local, _, domain = addr.partition("@")
    if not local or not domain or any(c.isspace() or c in '<>(),;:"[]\\' for c in addr):
        raise ValueError(f"{entry!r} is not an email address")
    return str(Address(display_name=name, addr_spec=addr)) if name else addr


def recipients(params: dict[str, Any]) -> list[str]:
    raw = params.get("to") or []
    found = [address(str(a).strip()) for a in (raw if isinstance(raw, list) else [raw])]
    found = [a for a in found if a]
    if not found:
        raise ValueError("the mail has no recipient")
    if len(found) > MAX_RECIPIENTS:
        raise ValueError(f"more than {MAX_RECIPIENTS} recipients")
    return list(dict.fromkeys(found))


def _subject(params: dict[str, Any]) -> str:
    subject = _no_line_breaks(str(params.get("subject") or "").strip(), "subject")
    if not subject:
        raise ValueError("the mail has no subject")
    if len(subject) > MAX_SUBJECT:
        raise ValueError(f"the subject is longer than {MAX_SUBJECT} characters")
    return subject


def _body(params: dict[str, Any]) -> str:
    body = str(params.get("body") or "")
    if not body.strip():
        raise ValueError("the mail's body is empty")
    if len(body) > MAX_BODY:
        raise ValueError(f"the body is longer than {MAX_BODY} characters")
    return body


def _threading(params: dict[str, Any]) -> tuple[str | None, list[str]]:
    parent = params.get("in_reply_to")
    refs = [str(r) for r in params.get("references") or []]
    for value in [parent, *refs]:
        if value is not None:
            _no_line_breaks(str(value), "Message-ID")
    return (str(parent) if parent else None), refs


def _first_lines(body: str) -> str:
    lines = [line.strip() for line in body.strip().splitlines() if line.strip()]
    shown = " / ".join(lines[:SHOWN_LINES])
    more = len(lines) > SHOWN_LINES or len(shown) > SHOWN_CHARS
    return shown[:SHOWN_CHARS] + ("…" if more else "")


def describe_send(params: dict[str, Any]) -> str:
    to, subject, body = recipients(params), _subject(params), _body(params)
    return f"Send an email to {', '.join(to)}, subject '{subject}': “{_first_lines(body)}”"


def describe_reply(params: dict[str, Any]) -> str:
    to, subject, body = recipients(params), _subject(params), _body(params)
    _threading(params)
    answered = f" (the mail {params['mail']})" if params.get("mail") else ""
    return (
        f"Reply by email{answered} to {', '.join(to)}, subject '{subject}': “{_first_lines(body)}”"
    )


def message_id(action: Action, key: str, sender: str) -> str:
    """`<maka-action-12.3f9a…@example.com>`: the same for every run of this row, and not
    another row's even where ids start again (a new database)."""
    seed = f"{key}\0{action.kind}\0{action.created_at.isoformat()}".encode()
    digest = hashlib.sha256(seed).hexdigest()[:16]
    domain = sender.rpartition("@")[2].strip(">").strip() or "localhost"
    return f"<{key}.{digest}@{domain}>"


def build(action: Action, key: str, sender: str) -> EmailMessage:
    params = action.params
    message = EmailMessage()
    message["From"] = sender
    message["To"] = ", ".join(recipients(params))
    message["Subject"] = _subject(params)
    message["Date"] = formatdate(localtime=False, usegmt=True)
    message["Message-ID"] = message_id(action, key, sender)
    parent, refs = _threading(params)
    if parent:
        message["In-Reply-To"] = parent
        message["References"] = " ".join(dict.fromkeys([*refs, parent]))
    message.set_content(_body(params))
    return message


def _usable(describe: Any, params: dict[str, Any]) -> None:
    try:
        describe(params)
    except ValueError as exc:
        raise ActionFailed(str(exc)) from None


async def _send(services: Services, action: Action, key: str) -> str:
    smtp = smtp_settings(services.settings)
    if smtp is None:
        raise ActionFailed(NOT_CONFIGURED)
    message = build(action, key, smtp.sender)
    try:
        return await asyncio.to_thread(deliver, smtp, imap_settings(services.settings), message)
    except MailRefused as exc:
        raise ActionFailed(str(exc)) from None


async def send_email(services: Services, action: Action, key: str) -> str:
    _usable(describe_send, action.params)
    return await _send(services, action, key)


async def reply_email(services: Services, action: Action, key: str) -> str:
    _usable(describe_reply, action.params)
    return await _send(services, action, key)


def register_mail_kinds() -> None:
    register_executor(SEND, send_email, describe=describe_send)
    register_executor(REPLY, reply_email, describe=describe_reply)
