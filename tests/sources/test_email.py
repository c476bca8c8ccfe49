"""Email against a real IMAP server (Dovecot): first and incremental syncs, mail left unread,
no duplicates after a UIDVALIDITY change, Chinese and HTML-only mail read correctly, and a
wrong password shown as an error in `maka sync status`."""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys
from email.header import Header
from email.mime.application import MIMEApplication
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText
from email.utils import formataddr
from pathlib import Path
from typing import Any

from sqlalchemy import select

from bot.config import Settings
from bot.sync.adapters import build_adapters
from bot.sync.cli import run_sync_now, run_sync_status
from sources.runner import SyncRunner
from storage.db import Database
from storage.models import Source, SourceRecord
from tests.apps import make_settings
from tests.sources.dovecot import MailAccount, mail


def email_settings(
    tmp_path: Path, database_url: str, account: MailAccount, **overrides: Any
) -> Settings:
    values: dict[str, Any] = {
        "email_host": account.server.host,
        "email_port": account.server.port,
        "email_security": "none",
        "email_user": account.user,
        "email_password": account.password,
    }
    values.update(overrides)
    return make_settings(tmp_path, database_url, **values)


async def records(db: Database, source: str | None = None) -> list[SourceRecord]:
    async with db.read() as s:
        stmt = select(SourceRecord).order_by(SourceRecord.id)
        if source is not None:
            stmt = stmt.where(SourceRecord.source == source)
        return list((await s.scalars(stmt)).all())


async def source(db: Database, name: str) -> Source:
    async with db.read() as s:
        row = await s.scalar(select(Source).where(Source.name == name))
    assert row is not None, name
    return row


def chinese_mail() -> bytes:
    msg = MIMEText("本周完成了数据库迁移，下周跟进性能问题。", "plain", "gb2312")
    msg["Subject"] = Header("周报：数据库迁移", "gb2312").encode()
    msg["From"] = formataddr((str(Header("张伟", "utf-8")), "zhang@example.com"))
    msg["To"] = "maka@example.com"
    msg["Message-ID"] = "<weekly-1@example.com>"
    return msg.as_bytes()


def html_only_mail() -> bytes:
    msg = MIMEText(
        "<html><head><style>p{color:red}</style></head><body><p>Your invoice is "
        "<b>ready</b></p><ul><li>Total: 42 EUR</li></ul><script>track()</script></body></html>",
        "html",
        "utf-8",
    )
    msg["Subject"] = "Invoice"
    msg["From"] = "billing@example.com"
    msg["Message-ID"] = "<invoice-7@example.com>"
    return msg.as_bytes()


def mail_with_attachment() -> bytes:
    msg = MIMEMultipart()
    msg["Subject"] = "Report attached"
    msg["From"] = "li@example.com"
    msg["Message-ID"] = "<report-3@example.com>"
    msg.attach(MIMEText("Here is the report.", "plain", "utf-8"))
    pdf = MIMEApplication(b"%PDF-1.4" + b"0" * 2040, "pdf")
    pdf.add_header("Content-Disposition", "attachment", filename=("utf-8", "", "季度报告.pdf"))
    msg.attach(pdf)
    return msg.as_bytes()


async def test_first_and_incremental_sync_leave_mail_unread_and_read_it_correctly(
    tmp_path: Path, db: Database, database_url: str, mail_account: MailAccount
) -> None:
    for raw in (chinese_mail(), html_only_mail(), mail_with_attachment()):
        mail_account.append("INBOX", raw)
    settings = email_settings(tmp_path, database_url, mail_account)
    out, bar = io.StringIO(), io.StringIO()

    assert await run_sync_now(settings, "email", out=out, progress_to=bar) == 0
    stored = await records(db, "email:INBOX")
    assert len(stored) == 3, out.getvalue()
    by_title = {r.title: r for r in stored}
    weekly = by_title["周报：数据库迁移"]
    assert weekly.text == "本周完成了数据库迁移，下周跟进性能问题。"
    assert weekly.author == "张伟 <zhang@example.com>"
    assert weekly.scope == "mail:INBOX"
    invoice = by_title["Invoice"]
    assert invoice.text == "Your invoice is ready\n\n- Total: 42 EUR"
    assert invoice.payload["html_only"] is True
    report = by_title["Report attached"]
    assert report.text == "Here is the report."
    assert report.payload["attachments"] == [
        {"name": "季度报告.pdf", "size": 2048, "content_type": "application/pdf"}
    ]
    assert "done: 3 new records" in out.getvalue()
    assert "email: 1 to sync" in bar.getvalue() and "email:INBOX: 3 read, 3 new" in bar.getvalue()

    # Nothing we did marked anything read.
    assert all("\\Seen" not in flags for flags in mail_account.flags("INBOX").values())

    # Incremental: only what arrived since.
    mail_account.append("INBOX", mail(subject="later", body="a new one"))
    mail_account.append("INBOX", mail(subject="already read", body="seen"), seen=True)
    assert await run_sync_now(settings, "email", out=io.StringIO(), progress_to=io.StringIO()) == 0
    stored = await records(db, "email:INBOX")
    assert len(stored) == 5
    inbox = await source(db, "email:INBOX")
    assert inbox.synced_cursor is not None and inbox.synced_cursor["last_uid"] == 5
    assert inbox.record_count == 5 and inbox.last_error is None and inbox.last_success_at
    assert (inbox.observed_cursor or {}).get("messages") == 5
    flags = mail_account.flags("INBOX")
    assert [uid for uid, f in sorted(flags.items()) if "\\Seen" in f] == [5]  # only its own
    # Another run with nothing new adds nothing.
    assert await run_sync_now(settings, "email", out=io.StringIO(), progress_to=io.StringIO()) == 0
    assert len(await records(db, "email:INBOX")) == 5


async def test_a_uidvalidity_change_reads_the_mailbox_again_without_duplicates(
    tmp_path: Path, db: Database, database_url: str, mail_account: MailAccount
) -> None:
    mailbox = "工作"  # a non-ASCII name: modified UTF-7 on the wire
    mail_account.create(mailbox)
    originals = [
        mail(subject="one", message_id="<one@example.com>"),
        mail(subject="two", message_id="<two@example.com>"),
        mail(subject="no id", message_id=None),  # keyed by its main headers
    ]
    for raw in originals:
        mail_account.append(mailbox, raw)
    settings = email_settings(tmp_path, database_url, mail_account, email_mailboxes=mailbox)
    adapters = build_adapters(settings, db)
    runner = SyncRunner(db, adapters, "test")
    [observed, result] = await runner.sync_kind("email")
    assert observed.ok and result.new == 3
    before = mail_account.uidvalidity(mailbox)

    mail_account.recreate(mailbox)
    assert mail_account.uidvalidity(mailbox) != before
    for raw in [*originals, mail(subject="three", message_id="<three@example.com>")]:
        mail_account.append(mailbox, raw)
    [_, again] = await runner.sync_kind("email")
    assert again.error is None and again.seen == 4 and again.new == 1

    stored = await records(db, f"email:{mailbox}")
    assert sorted(r.title or "" for r in stored) == ["no id", "one", "three", "two"]
    cursor = (await source(db, f"email:{mailbox}")).synced_cursor or {}
    assert cursor["uidvalidity"] == mail_account.uidvalidity(mailbox)
    assert cursor["resyncs"] == 1 and cursor["last_uid"] == 4


async def test_a_reply_joins_its_thread_and_a_missing_mailbox_is_an_error(
    tmp_path: Path, db: Database, database_url: str, mail_account: MailAccount
) -> None:
    mail_account.append("INBOX", mail(subject="plan", message_id="<plan@example.com>"))
    mail_account.append(
        "INBOX",
        mail(subject="Re: plan", message_id="<re@example.com>", in_reply_to="<plan@example.com>"),
    )
    settings = email_settings(tmp_path, database_url, mail_account, email_mailboxes="INBOX,Archive")
    out = io.StringIO()
    assert await run_sync_now(settings, "email", out=out, progress_to=io.StringIO()) == 1
    assert "email:Archive: ERROR: mailbox 'Archive'" in out.getvalue()
    plan, reply = await records(db, "email:INBOX")
    assert reply.thread_key == plan.thread_key == plan.external_id
    archive = await source(db, "email:Archive")
    assert archive.last_error and "Archive" in archive.last_error
    status = io.StringIO()
    assert await run_sync_status(settings, out=status) == 1
    assert (
        "email:Archive" in status.getvalue()
        and "ERROR" not in status.getvalue().split("errors:")[0]
    )
    assert "errors:" in status.getvalue()


async def _maka(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli.main",  # `maka`
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_a_wrong_password_shows_as_an_error_in_sync_status(
    tmp_path: Path, db: Database, database_url: str, mail_account: MailAccount
) -> None:
    mail_account.append("INBOX", mail(subject="hello"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKA_")}
    env.update(
        MAKA_DATA_DIR=str(tmp_path / "data"),
        MAKA_DATABASE_URL=database_url,
        MAKA_EMAIL_HOST=mail_account.server.host,
        MAKA_EMAIL_PORT=str(mail_account.server.port),
        MAKA_EMAIL_SECURITY="none",
        MAKA_EMAIL_USER=mail_account.user,
        MAKA_EMAIL_PASSWORD=mail_account.password,
    )
    code, out, err = await _maka(env, "sync", "email")
    assert code == 0, out + err
    assert len(await records(db)) == 1

    env["MAKA_EMAIL_PASSWORD"] = "not-the-password"
    code, out, err = await _maka(env, "sync", "email")
    assert code == 1
    assert "email: ERROR: login as" in out and "AUTHENTICATIONFAILED" in out
    assert "not-the-password" not in out + err

    code, out, _ = await _maka(env, "sync", "status")
    assert code == 1
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("email")}
    assert lines["email"].split()[-1] == "error"
    assert lines["email:INBOX"].split()[-1] == "error"  # not "ok": it cannot be reached now
    assert "AUTHENTICATIONFAILED" in out.split("errors:")[1]

    code, out, _ = await _maka(env, "sync", "status", "--json")
    by_name = {s["name"]: s for s in json.loads(out)}
    assert "login as" in by_name["email"]["last_error"]
    assert by_name["email:INBOX"]["last_error"].startswith("observation failed: login as")
    assert by_name["email:INBOX"]["records"] == 1
    assert by_name["email:INBOX"]["last_success_at"] is not None


async def test_a_very_large_mail_is_read_from_its_start_only(
    tmp_path: Path, db: Database, database_url: str, mail_account: MailAccount
) -> None:
    msg = MIMEMultipart()
    msg["Subject"] = "Raw footage"
    msg["Message-ID"] = "<big@example.com>"
    msg.attach(MIMEText("The video is attached.", "plain", "utf-8"))
    video = MIMEApplication(os.urandom(3 * 1024 * 1024), "octet-stream")
    video.add_header("Content-Disposition", "attachment", filename="clip.mp4")
    msg.attach(video)
    mail_account.append("INBOX", msg.as_bytes())
    mail_account.append("INBOX", mail(subject="small one"))
    settings = email_settings(tmp_path, database_url, mail_account)
    assert await run_sync_now(settings, "email", out=io.StringIO(), progress_to=io.StringIO()) == 0
    by_title = {r.title: r for r in await records(db, "email:INBOX")}
    big = by_title["Raw footage"]
    assert big.text == "The video is attached."
    assert big.payload["truncated"] is True
    assert big.payload["attachments"] == [
        {"name": "clip.mp4", "size": None, "content_type": "application/octet-stream"}
    ]
    assert big.payload["size"] > 4 * 1024 * 1024  # base64: the whole mail, as the server says
    assert "small one" in by_title
