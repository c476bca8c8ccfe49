"""A mail's attachments (real IMAP, Dovecot): stored with the mail, read by the extraction
worker, and then found by search like the mail itself."""

from __future__ import annotations

import contextlib
import io
from email.mime.application import MIMEApplication
from email.mime.image import MIMEImage
from email.mime.multipart import MIMEMultipart
from email.mime.text import MIMEText
from pathlib import Path

from sqlalchemy import select

from bot.attachments.worker import ExtractionWorker
from bot.cli.search import run_rebuild, run_search
from bot.host.notify import Notifier
from bot.sync.cli import run_sync_now
from storage.db import Database
from storage.models import SourceRecord
from storage.repos import attachments
from tests.attachments.fixtures import dovecot_server, mail_account, quick_retries  # noqa: F401
from tests.sources.dovecot import MailAccount
from tests.sources.test_email import email_settings

WORD = "marmaladequota"


def mail_with_a_csv_and_a_logo() -> bytes:
    msg = MIMEMultipart()
    msg["Subject"] = "Budget figures"
    msg["From"] = "li@example.com"
    msg["Message-ID"] = "<budget-9@example.com>"
    msg.attach(MIMEText("Figures attached.", "plain", "utf-8"))
    csv = MIMEApplication(f"item,amount\n{WORD},42\n".encode(), "csv")
    csv.add_header("Content-Disposition", "attachment", filename="budget.csv")
    msg.attach(csv)
    logo = MIMEImage(b"\x89PNG\r\n\x1a\n" + b"0" * 100, "png")  # an inline logo: skipped
    logo.add_header("Content-Disposition", "inline")
    msg.attach(logo)
    return msg.as_bytes()


async def test_a_mailed_csvs_word_is_searchable_once_the_extraction_worker_ran(
    tmp_path: Path,
    db: Database,
    database_url: str,
    mail_account: MailAccount,  # noqa: F811
) -> None:
    mail_account.append("INBOX", mail_with_a_csv_and_a_logo())
    settings = email_settings(tmp_path, database_url, mail_account)
    assert await run_sync_now(settings, "email", out=io.StringIO(), progress_to=io.StringIO()) == 0
    worker = ExtractionWorker(db, Notifier(), "test-worker")
    assert await worker.run_once()
    assert not await worker.run_once()  # one file kept: the logo is not read
    async with db.read() as tx:
        [mail] = (
            await tx.scalars(select(SourceRecord).where(SourceRecord.title == "Budget figures"))
        ).all()
        rows = await attachments.of_messages(tx, "mail", [mail.external_id])
        record = await tx.get(SourceRecord, rows[0].record_id)
    assert [(r.name, r.state) for r in rows] == [("budget.csv", attachments.DONE)]
    assert record is not None and WORD in record.text
    assert (record.source, record.scope) == (mail.source, mail.scope)
    assert await run_rebuild(settings) == 0
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert await run_search(settings, WORD, None, False, 5) == 0
    assert "attachment 'budget.csv'" in out.getvalue()
