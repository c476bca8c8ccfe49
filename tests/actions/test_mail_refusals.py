"""Mail actions at their edges: bad input refused in one line before anything is proposed;
the SMTP server's permanent refusal fails an action at once, a passing one is retried and
parked, a partial one is done and says who; without SMTP settings the tools say what to set;
`maka doctor` checks SMTP in one line; incomplete settings stop start-up in one line."""

from __future__ import annotations

from typing import Any

import pytest

from bot.actions.mail import SEND, describe_send, register_mail_kinds
from bot.actions.registry import propose
from bot.actions.worker import ActionWorker
from bot.assistant.component import Assistant
from bot.cli.doctor import check_smtp
from bot.config import ConfigError, Role, load_settings
from bot.llm.scripted import ScriptedProvider
from storage.repos import actions as repo
from storage.types import utcnow
from tests.actions.support import actions
from tests.actions.test_mail_actions import NOTE, OWNER_ADDRESS, mail_settings, tool_said
from tests.assistant.support import bot_world, quiet, say, send
from tests.assistant.support import sleep as sleep_step
from tests.feishu_world import OWNER, FeishuWorld, WorldFactory
from tests.seed import owner_dm
from tests.smtp_server import SmtpServer, free_port


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
