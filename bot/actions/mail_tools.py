"""The Bot's mail tools: each proposes its action (bot/actions/mail.py) through the one door,
`propose`, and says what happens now (running, waiting for the owner, refused).

A reply names the mail it answers by its memory ref (rec-N, from memory_search); the asker
must be able to see that mail (the one visibility rule): one who cannot learns nothing of it,
not even that it exists, from the same line any unknown ref gets."""

from __future__ import annotations

import re
from typing import Any

from bot.actions.context import ActionContext, ActionTools
from bot.actions.mail import REPLY, SEND, register_mail_kinds
from bot.actions.mail_transport import NOT_CONFIGURED
from bot.actions.tools import proposed
from bot.agent.tools import ToolError
from bot.parsing import parse_id
from sources.email import KIND as EMAIL
from storage.models import SourceRecord
from storage.repos import originals
from storage.repos.source_records import is_tombstone

NO_SUCH_MAIL = "no such mail here: use a mail's ref from memory_search (rec-…)"
_REF = re.compile(r"^\s*rec-([0-9]+)\s*$")


def _configured(ctx: ActionContext) -> None:
    if not ctx.services.settings.smtp_configured:
        raise ToolError(NOT_CONFIGURED)


def _addresses(to: str) -> list[str]:
    return [a.strip() for a in re.split(r"[,;]", to) if a.strip()]


async def _visible_mail(ctx: ActionContext, ref: str) -> SourceRecord:
    m = _REF.match(ref)
    seq = parse_id(m.group(1)) if m else None
    if seq is None:
        raise ToolError(NO_SUCH_MAIL)
    async with ctx.services.db.read() as tx:
        rec = await originals.record(tx, seq)
    visibility = (await ctx.asker()).visibility
    if (
        rec is None
        or is_tombstone(rec.payload)
        or not visibility.sees_scope(rec.scope)
        or rec.source.split(":", 1)[0] != EMAIL
    ):
        raise ToolError(NO_SUCH_MAIL)
    return rec


def _re(subject: str | None) -> str:
    subject = " ".join((subject or "").split())  # a folded header: one line
    return subject if subject.lower().startswith("re:") else f"Re: {subject}".strip()


async def send_email(ctx: ActionContext, to: str, subject: str, body: str, reason: str) -> str:
    """Send an email from the owner's address: `to` one or more addresses, comma separated
    (like "Li Wei <li@example.com>, wang@example.com"); `body` plain text. It waits for the
    owner's approval unless the owner allowed it; the result says which."""
    _configured(ctx)
    params: dict[str, Any] = {"to": _addresses(to), "subject": subject.strip(), "body": body}
    return await proposed(ctx, SEND, params, reason)


async def reply_email(ctx: ActionContext, mail: str, body: str, reason: str) -> str:
    """Reply to a mail found by memory_search (`mail`: its ref, rec-N): to its Reply-To or
    sender, subject "Re: …", in its thread; `body` plain text. It waits for the owner's
    approval unless the owner allowed it; the result says which."""
    _configured(ctx)
    rec = await _visible_mail(ctx, mail)
    payload = rec.payload or {}
    to = payload.get("reply_to") or payload.get("from") or rec.author
    if not to:
        raise ToolError(f"the mail {mail.strip()} has no sender to reply to")
    parent = payload.get("message_id")
    params: dict[str, Any] = {
        "to": [str(to)],
        "subject": _re(rec.title),
        "body": body,
        "mail": f"rec-{rec.id}",
    }
    if parent:
        params["in_reply_to"] = str(parent)
        params["references"] = [str(r) for r in payload.get("references") or []]
    return await proposed(ctx, REPLY, params, reason)


def install_mail_tools(tools: ActionTools[Any]) -> None:
    register_mail_kinds()
    for tool in (send_email, reply_email):
        tools.tool(tool)
