"""Mail actions through the real Bot, a real SMTP server (aiosmtpd on loopback) and a real
mailbox (Dovecot): asked to send a mail, the owner gets an approval card and nothing is sent
before the click; after Approve (the click delivered twice) exactly one mail reaches the SMTP
server and a copy is in Sent; a crash after the server accepted it finds it in Sent and sends
nothing more; Reject sends nothing; a reply is threaded to the mail it answers; a group
member cannot reply to the owner's mail nor learn of it; bad input is refused in one line."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import update

from bot.actions.ledger import ACTIONS_TOPIC
from bot.actions.mail import SEND, describe_send, register_mail_kinds
from bot.actions.mail_tools import NO_SUCH_MAIL
from bot.actions.registry import propose
from bot.actions.worker import ActionWorker
from bot.assistant.component import Assistant
from bot.cli.doctor import check_smtp
from bot.config import ConfigError, Role, load_settings
from bot.llm.scripted import ScriptedProvider, Step
from sources.email import Meta, mail_record
from sources.mime import parse_mail
from storage.models import Action
from storage.repos import actions as repo
from storage.repos import sources as sources_repo
from storage.types import utcnow
from tests.actions.support import actions, click, settled, the_approval_card
from tests.assistant.support import bot_world, quiet, say, say_in_group, send
from tests.assistant.support import sleep as sleep_step
from tests.feishu_world import OWNER, FeishuWorld, WorldFactory
from tests.seed import owner_dm
from tests.smtp_server import SmtpServer, free_port, smtp_server
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


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    with smtp_server() as server:
        yield server


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
        [(record_id, _, _)] = await sources_repo.insert_records(s, [record], utcnow())
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


@pytest.mark.parametrize(
    ("params", "refusal"),
    [
        ({"to": [], "subject": "s", "body": "b"}, "the mail has no recipient"),
        ({"to": ["li.wei"], "subject": "s", "body": "b"}, "'li.wei' is not one email address"),
        ({"to": ["a@b@c"], "subject": "s", "body": "b"}, "'a@b@c' is not one email address"),
        ({"to": ["li@example.com"], "subject": "s", "body": "  "}, "the mail's body is empty"),
        ({"to": ["li@example.com"], "subject": "", "body": "b"}, "the mail has no subject"),
        (
            {"to": ["li@example.com\nBcc: x@example.com"], "subject": "s", "body": "b"},
            "the address has a line break",
        ),
    ],
)
def test_bad_mail_input_is_refused_in_one_line(params: dict[str, Any], refusal: str) -> None:
    with pytest.raises(ValueError) as refused:
        describe_send(params)
    assert str(refused.value) == refusal


async def _proposed_and_run(
    w: FeishuWorld, attempts: int, to: tuple[str, ...] = ("li@example.com",)
) -> Any:
    services = w.app.services
    register_mail_kinds()
    async with services.db.write() as s:
        dm = await owner_dm(s)
        await repo.allow(s, kind=SEND, conversation_id=None, by=OWNER, now=utcnow())
    params = {"to": list(to), "subject": "s", "body": "b"}
    proposed = await propose(
        services, kind=SEND, params=params, requester=OWNER, conversation=dm, reason="test"
    )
    assert proposed.outcome == "running", proposed.line
    worker = ActionWorker(services, owner="test-worker", max_attempts=attempts, retry_first=0.0)
    for _ in range(attempts + 1):  # each run takes what is due; a failed try is due again
        await worker.run_once()
    return (await actions(w))[-1]  # the test's second world has the first's rows too


async def test_a_permanent_refusal_fails_at_once_and_a_passing_one_is_retried(
    make_world: WorldFactory, smtp: SmtpServer
) -> None:
    settings = mail_settings(smtp, None)
    async with make_world(role=Role.WEB, bot=Assistant(), model_provider=None, **settings) as w:
        smtp.answer = "550 5.7.1 relaying denied"
        row = await _proposed_and_run(w, 3)
        assert (row.state, row.attempts) == (repo.FAILED, 1)
        assert row.last_error == "the mail server refused it: 550 5.7.1 relaying denied"
    async with make_world(role=Role.WEB, bot=Assistant(), model_provider=None, **settings) as w:
        smtp.answer, smtp.tried = "451 4.3.0 try again later", 0
        row = await _proposed_and_run(w, 2)
        assert (row.state, row.attempts, smtp.tried) == (repo.FAILED, 2, 2)
        assert row.last_error.startswith("gave up after 2 tries: SMTPDataError: (451"), (
            row.last_error
        )
        assert smtp.received == []


async def test_a_mail_some_recipients_refused_is_done_and_says_who(
    make_world: WorldFactory, smtp: SmtpServer
) -> None:
    settings = mail_settings(smtp, None)
    async with make_world(role=Role.WEB, bot=Assistant(), model_provider=None, **settings) as w:
        smtp.unknown = {"nobody@example.com"}
        row = await _proposed_and_run(w, 3, to=("li@example.com", "nobody@example.com"))
        assert (row.state, row.attempts) == (repo.DONE, 1)  # sent again, Li would get it twice
        [got] = smtp.received
        assert got.rcpt_tos == ["li@example.com"]
        assert row.result.endswith("; refused: nobody@example.com (550)"), row.result


async def test_without_smtp_settings_the_tool_says_what_to_set(
    make_world: WorldFactory,
) -> None:
    provider = ScriptedProvider([send("send_email", NOTE), sleep_step])
    async with bot_world(make_world, provider) as w:
        await say(w, "tell Li we accept")
        await quiet(w)
        assert tool_said(provider, "send_email") == (
            "error: email cannot be sent: set MAKA_SMTP_HOST (and MAKA_SMTP_FROM, MAKA_SMTP_*)"
        )
        assert await actions(w) == []


async def test_doctor_checks_smtp_in_one_line(smtp: SmtpServer, tmp_path: Any) -> None:
    env = {"data_dir": tmp_path, "smtp_tls": "none", "smtp_from": OWNER_ADDRESS}
    up = await check_smtp(load_settings(smtp_host=smtp.host, smtp_port=smtp.port, **env))
    assert up.line() == (
        f"ok    smtp: {smtp.host}:{smtp.port} (none) (no login), sending from {OWNER_ADDRESS}"
    )
    closed = free_port()
    down = await check_smtp(load_settings(smtp_host=smtp.host, smtp_port=closed, **env))
    assert not down.ok and down.line().startswith(f"FAIL  smtp: {smtp.host}:{closed} (none): ")
    assert "ConnectionRefusedError" in down.line() and "\n" not in down.line()
    unset = await check_smtp(load_settings(data_dir=tmp_path))
    assert unset.ok and unset.detail.startswith("not configured")


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        (
            {"smtp_host": "smtp.example.com"},
            "MAKA_SMTP_FROM: MAKA_SMTP_HOST needs the sender's address in MAKA_SMTP_FROM"
            " (or an address as MAKA_EMAIL_USER)",
        ),
        (
            {"smtp_host": "smtp.example.com", "smtp_from": "me@example.com", "smtp_username": "me"},
            "MAKA_SMTP_PASSWORD: MAKA_SMTP_USERNAME needs MAKA_SMTP_PASSWORD",
        ),
        ({"smtp_tls": "ssl"}, "MAKA_SMTP_TLS: Input should be 'tls', 'starttls' or 'none'"),
    ],
)
def test_incomplete_smtp_settings_stop_start_up_in_one_line(
    settings: dict[str, str], problem: str, tmp_path: Any
) -> None:
    with pytest.raises(ConfigError) as refused:
        load_settings(data_dir=tmp_path, **settings)
    assert refused.value.lines[0].startswith(problem), refused.value.lines
