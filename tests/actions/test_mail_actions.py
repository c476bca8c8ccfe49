"""Mail actions through the real Bot, a real SMTP server (aiosmtpd on loopback) and a real
mailbox (Dovecot): asked to send a mail, the owner gets an approval card and nothing is sent
before the click; after Approve (the click delivered twice) exactly one mail reaches the SMTP
server and a copy is in Sent; a crash after the server accepted it finds it in Sent and sends
nothing more; Reject sends nothing; a reply is threaded to the mail it answers; a group
member cannot reply to the owner's mail nor learn of it; bad input is refused in one line."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

from sqlalchemy import update

from bot.actions.ledger import ACTIONS_TOPIC
from bot.actions.mail_tools import NO_SUCH_MAIL
from bot.actions.worker import ActionWorker
from bot.llm.scripted import ScriptedProvider, Step
from sources.email import Meta, mail_record
from sources.mime import parse_mail
from storage.models import Action
from storage.repos import actions as repo
from storage.repos import source_records
from storage.repos import sources as sources_repo
from storage.types import utcnow
from tests.actions.support import actions, click, settled, the_approval_card
from tests.assistant.support import bot_world, quiet, say, say_in_group, send
from tests.assistant.support import sleep as sleep_step
from tests.feishu_world import OWNER, FeishuWorld, WorldFactory
from tests.smtp_server import SmtpServer
from tests.sources.conftest import dovecot_server, mail_account  # noqa: F401  (fixtures)
from tests.sources.dovecot import MailAccount, mail

OWNER_ADDRESS = "owner@example.com"
LI = "Li Wei <li.wei@example.com>"
NOTE = {
    "to": LI,
    "subject": "Packaging",
    "body": "Hi Li,\nwe accept the offer.\nThanks\nOwner",
    "reason": "the owner asked to accept Li's offer",
}
ORIGINAL_ID = "<offer-7@example.com>"
OFFER = mail(
    subject="Packaging offer",
    sender="Wang Fang <wang.fang@example.com>",
    to=OWNER_ADDRESS,
    message_id=ORIGINAL_ID,
    in_reply_to="<thread-1@example.com>",
    extra_headers="Reply-To: Sales <sales@example.com>\r\n",
    body="Please confirm by Friday.",
)


def mail_settings(smtp: SmtpServer, account: MailAccount | None) -> dict[str, Any]:
    found: dict[str, Any] = {
        "smtp_host": smtp.host,
        "smtp_port": smtp.port,
        "smtp_tls": "none",
        "smtp_from": OWNER_ADDRESS,
        "sync_email_interval": 0,  # records are put in place by the tests
    }
    if account is not None:
        found |= {
            "email_host": account.server.host,
            "email_port": account.server.port,
            "email_security": "none",
            "email_user": account.user,
            "email_password": account.password,
        }
    return found


@asynccontextmanager
async def mail_world(
    make_world: WorldFactory, steps: list[Step], smtp: SmtpServer, account: MailAccount
) -> AsyncIterator[tuple[FeishuWorld, ScriptedProvider]]:
    provider = ScriptedProvider(steps)
    async with bot_world(make_world, provider, **mail_settings(smtp, account)) as w:
        yield w, provider


def sent_copies(account: MailAccount, message_id: str, folder: str = "Sent") -> list[set[str]]:
    """The flags of each copy of that mail in Sent (but \\Recent: this session's news)."""
    with account.imap() as conn:
        typ, _ = conn.select(f'"{folder}"', readonly=True)
        if typ != "OK":
            return []
        typ, data = conn.uid("SEARCH", "HEADER", "Message-ID", f'"{message_id}"')
        uids = (data[0] or b"").split()
        return [
            flags - {"\\Recent"}
            for uid, flags in account.flags(folder).items()
            if str(uid).encode() in uids
        ]


def tool_said(provider: ScriptedProvider, tool: str) -> str:
    """What the tool answered the model (the latest call), out of its data frame."""
    for messages, _ in reversed(provider.requests):
        for m in reversed(messages):
            if m.role == "tool" and m.name == tool:
                return (m.content or "").split("\n", 1)[1].rsplit("\n", 1)[0]
    raise AssertionError(f"{tool} was not called")


async def the_offer(w: FeishuWorld) -> int:
    """The offer mail as the email source stores it; its record id (its ref is rec-N)."""
    parsed = parse_mail(OFFER)
    record = mail_record("INBOX", 1, 1, parsed, Meta(len(OFFER), (), None), False)
    async with w.app.services.db.write() as s:
        await sources_repo.ensure(
            s, name="email:INBOX", kind="email", scope=None, title=None, now=utcnow()
        )
        [(record_id, _, _)] = await source_records.insert_records(s, [record], utcnow())
    return record_id


async def test_a_mail_waits_for_approve_and_is_sent_once_and_filed_in_sent(
    make_world: WorldFactory,
    smtp: SmtpServer,
    mail_account: MailAccount,  # noqa: F811
) -> None:
    async with mail_world(
        make_world, [send("send_email", NOTE), sleep_step], smtp, mail_account
    ) as (
        w,
        _,
    ):
        await say(w, "tell Li we accept")
        card = await the_approval_card(w)
        assert (
            "Send an email to Li Wei <li.wei@example.com>, subject 'Packaging': "
            "“Hi Li, / we accept the offer. / Thanks…”" in card.content
        )
        await quiet(w)
        assert smtp.tried == 0  # nothing before the click

        event = await click(w, card, "Approve")
        status, body = await w.events.post(event)  # the same click, delivered again
        assert status == 200, body
        row = await settled(w, 1, repo.DONE)
        [got] = smtp.received
        message_id = str(got.message["Message-ID"])
        assert re.fullmatch(r"<maka-action-1\.[0-9a-f]{16}@example\.com>", message_id)
        assert row.result == f"sent to {LI} as {message_id}; filed in Sent"
        assert got.rcpt_tos == ["li.wei@example.com"] and got.mail_from == OWNER_ADDRESS
        assert got.message.get_content().splitlines()[:2] == ["Hi Li,", "we accept the offer."]
        assert sent_copies(mail_account, message_id) == [{"\\Seen"}]


async def test_a_crash_after_the_server_accepted_a_mail_sends_nothing_more(
    make_world: WorldFactory,
    smtp: SmtpServer,
    mail_account: MailAccount,  # noqa: F811
) -> None:
    async with mail_world(
        make_world, [send("send_email", NOTE), sleep_step], smtp, mail_account
    ) as (
        w,
        _,
    ):
        services = w.app.services
        await say(w, "tell Li we accept")
        await the_approval_card(w)
        crashed = ActionWorker(services, owner="crashed-host", lease=timedelta(minutes=5))
        async with services.db.write() as s:  # approved and claimed at once, by a doomed host
            assert await repo.decide(s, 1, to=repo.APPROVED, by=OWNER, now=utcnow())
            [row] = await repo.claim_due(
                s, owner=crashed.owner, now=utcnow(), limit=1, lease=crashed.lease
            )
        state, _ = await crashed.execute(row)  # the mail is sent...
        assert state == repo.DONE  # ...and the process dies before recording it
        async with services.db.write() as s:  # its lease runs out (no race with the send)
            await s.execute(update(Action).where(Action.id == 1).values(lease_expires_at=utcnow()))
        await services.notifier.notify(ACTIONS_TOPIC)
        row = await settled(w, 1, repo.DONE)  # the running worker takes the row over
        assert row.attempts == 2  # run twice...
        [got] = smtp.received  # ...sent once
        message_id = str(got.message["Message-ID"])
        assert row.result == f"already sent: {message_id} is in the Sent folder"
        assert len(sent_copies(mail_account, message_id)) == 1


async def test_the_copy_goes_to_the_folder_the_server_marks_sent(
    make_world: WorldFactory,
    smtp: SmtpServer,
    mail_account: MailAccount,  # noqa: F811
) -> None:
    mail_account.create("Sent Items")  # SPECIAL-USE \\Sent (tests/sources/dovecot.py)
    steps: list[Step] = [send("send_email", NOTE), sleep_step]
    async with mail_world(make_world, steps, smtp, mail_account) as (w, _):
        await say(w, "/allow send_email")
        await quiet(w)
        await say(w, "tell Li we accept")
        row = await settled(w, 1, repo.DONE)
        [got] = smtp.received
        message_id = str(got.message["Message-ID"])
        assert row.result == f"sent to {LI} as {message_id}; filed in Sent Items"
        assert sent_copies(mail_account, message_id, "Sent Items") == [{"\\Seen"}]
        assert sent_copies(mail_account, message_id) == []  # no "Sent" was made


async def test_reject_sends_no_mail(
    make_world: WorldFactory,
    smtp: SmtpServer,
    mail_account: MailAccount,  # noqa: F811
) -> None:
    async with mail_world(
        make_world, [send("send_email", NOTE), sleep_step], smtp, mail_account
    ) as (
        w,
        _,
    ):
        await say(w, "tell Li we accept")
        card = await the_approval_card(w)
        await click(w, card, "Reject")
        await settled(w, 1, repo.REJECTED)
        await quiet(w)
        assert smtp.tried == 0


async def test_a_reply_goes_to_reply_to_in_the_thread_of_the_mail(
    make_world: WorldFactory,
    smtp: SmtpServer,
    mail_account: MailAccount,  # noqa: F811
) -> None:
    async with mail_world(make_world, [], smtp, mail_account) as (w, provider):
        ref = f"rec-{await the_offer(w)}"
        provider.add(send("reply_email", {"mail": ref, "body": "Confirmed.", "reason": "asked"}))
        provider.add(sleep_step)
        await say(w, "/allow reply_email")
        await quiet(w)
        await say(w, "confirm Wang's offer")
        row = await settled(w, 1, repo.DONE)
        assert row.summary == (
            f"Reply by email (the mail {ref}) to Sales <sales@example.com>, "
            "subject 'Re: Packaging offer': “Confirmed.”"
        )
        [got] = smtp.received
        assert got.rcpt_tos == ["sales@example.com"]
        assert got.message["Subject"] == "Re: Packaging offer"
        assert got.message["In-Reply-To"] == ORIGINAL_ID
        assert got.message["References"] == f"<thread-1@example.com> {ORIGINAL_ID}"
        assert "waits" not in tool_said(provider, "reply_email")


async def test_a_group_member_cannot_reply_to_the_owners_mail_nor_learn_of_it(
    make_world: WorldFactory,
    smtp: SmtpServer,
    mail_account: MailAccount,  # noqa: F811
) -> None:
    async with mail_world(make_world, [], smtp, mail_account) as (w, provider):
        ref = f"rec-{await the_offer(w)}"
        for mail_ref in (ref, "rec-999999"):  # the owner's mail reads as one that is not there
            provider.add(send("reply_email", {"mail": mail_ref, "body": "ok", "reason": "asked"}))
            provider.add(sleep_step)
            await say_in_group(w, "confirm the offer")
            await quiet(w)
            assert tool_said(provider, "reply_email") == f"error: {NO_SUCH_MAIL}"
        assert await actions(w) == [] and smtp.tried == 0


async def test_a_line_break_in_a_header_is_refused_in_one_line(
    make_world: WorldFactory,
    smtp: SmtpServer,
    mail_account: MailAccount,  # noqa: F811
) -> None:
    injected = {**NOTE, "subject": "Hello\r\nBcc: everyone@example.com"}
    async with mail_world(
        make_world, [send("send_email", injected), sleep_step], smtp, mail_account
    ) as (
        w,
        provider,
    ):
        await say(w, "tell Li we accept")
        await quiet(w)
        assert tool_said(provider, "send_email") == "refused: the subject has a line break"
        assert await actions(w) == [] and smtp.tried == 0
