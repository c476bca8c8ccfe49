"""A forgotten source stays forgotten: `/forget source email confirm` stops the mailbox's
syncing (the worker's, `/sync email`'s and `maka sync email`'s), `/sync status` says so and
since when, and `/sync resume email` brings only mail the assistant has not had. The real
app against a real IMAP server (Dovecot), on both databases."""

from __future__ import annotations

import io
from pathlib import Path

from sqlalchemy import select

from bot.llm.scripted import ScriptedProvider
from bot.sync.cli import run_sync_now, run_sync_status
from storage.db import Database
from storage.models import SourceRecord
from storage.repos.source_records import is_tombstone
from tests.assistant.support import bot_world, replies, say
from tests.feishu_world import WorldFactory
from tests.sources.dovecot import MailAccount, mail
from tests.sources.test_email import email_settings
from tests.waiting import wait_until


async def mail_texts(db: Database) -> set[str]:
    """The words of the mail kept (tombstones hold none)."""
    async with db.read() as tx:
        rows = (
            await tx.scalars(select(SourceRecord).where(SourceRecord.source.like("email:%")))
        ).all()
    return {r.text for r in rows if not is_tombstone(r.payload)}


async def test_a_forgotten_mailbox_is_not_synced_again_until_the_owner_resumes_it(
    make_world: WorldFactory, mail_account: MailAccount, tmp_path: Path, database_url: str
) -> None:
    mail_account.append("INBOX", mail(subject="a", body="the heron report"))
    mail_account.append("INBOX", mail(subject="b", body="the falcon invoice"))
    imap = email_settings(tmp_path, database_url, mail_account)
    email = {
        key: getattr(imap, key)
        for key in ("email_host", "email_port", "email_security", "email_user", "email_password")
    }
    async with bot_world(make_world, ScriptedProvider([]), **email) as w:
        db = w.app.services.db
        await say(w, "/sync email")
        await wait_until(
            lambda: _has(db, {"the heron report", "the falcon invoice"}),
            what="the mailbox's first sync",
        )

        await say(w, "/forget source email")
        plan = (await replies(w, 2))[1]
        assert "will remove 2 records" in plan, plan
        assert "stops syncing email, email:INBOX until you send /sync resume email" in plan

        await say(w, "/forget source email confirm")
        done = (await replies(w, 3))[2]
        assert "Forgot source email" in done and "2 records" in done, done
        assert "Stopped syncing email, email:INBOX; /sync resume email" in done, done
        assert await mail_texts(db) == set()

        mail_account.append("INBOX", mail(subject="c", body="the osprey plan"))
        await say(w, "/sync email")
        refused = (await replies(w, 4))[3]
        assert refused.startswith("email is stopped by forget #1 on "), refused
        out = io.StringIO()  # the operator's `maka sync email` skips it too
        assert await run_sync_now(w.app.services.settings, "email", out=out) == 0
        assert "email: skipped, stopped by forget #1 on" in out.getvalue(), out.getvalue()
        table = io.StringIO()
        await run_sync_status(w.app.services.settings, out=table)
        assert "  email:INBOX: stopped by forget #1 on " in table.getvalue(), table.getvalue()
        assert await mail_texts(db) == set()  # nothing new came from the mailbox

        await say(w, "/sync status")
        status = (await replies(w, 5))[4]
        inbox = next(line for line in status.splitlines() if line.startswith("email:INBOX"))
        assert "stopped by forget #1 on " in inbox, status
        assert inbox.endswith("not synced until /sync resume email:INBOX"), inbox

        await say(w, "/sync resume email")
        resumed = (await replies(w, 6))[5]
        assert resumed.startswith("email, email:INBOX will sync again: only what I have"), resumed
        await wait_until(lambda: _has(db, {"the osprey plan"}), what="the new mail after resume")
        assert await mail_texts(db) == {"the osprey plan"}  # the forgotten mail stays gone


async def _has(db: Database, texts: set[str]) -> bool:
    return texts <= await mail_texts(db)
