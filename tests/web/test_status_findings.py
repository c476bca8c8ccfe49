"""What the status page and /status.json show of findings: a title (its number) and the
`/why` id of what the Bot sent, and counts; never a finding's text, which quotes the owner's
DMs and mail (both databases)."""

from __future__ import annotations

import html
from pathlib import Path

from storage.db import Database
from storage.models import Finding
from storage.repos import conversations, inbox
from storage.repos import discovery as repo
from storage.types import utcnow
from tests.apps import make_settings, running_app

DM_SENTENCE = "I am quietly interviewing at Globex next Tuesday"
MAIL_SUBJECT = "Re: Offer letter - confidential compensation details"


async def seed_a_told_finding(db: Database) -> tuple[int, int]:
    now = utcnow()
    text = f"You told Li '{DM_SENTENCE}'; the mail '{MAIL_SUBJECT}' is unanswered"
    async with db.write() as s:
        dm = await conversations.get_or_create(
            s, platform="feishu", chat_id="oc_owner_dm", chat_type="p2p", peer_open_id="ou_owner"
        )
        round_ = await repo.open_round(s, "a deep round is due", {}, now)
        finding = await repo.add_finding(
            s, Finding(round_id=round_.id, ordinal=1, text=text, refs=["rec-1"],
                       status=repo.QUEUED, created_at=now),
        )  # fmt: skip
        item = await inbox.append(
            s, kind="finding", payload={"text": f"F-{finding.id}: {text}", "finding": finding.id},
            conversation_id=dm.id, dedupe_key=repo.finding_item_key(finding.id), created_at=now,
        )  # fmt: skip
        assert item is not None
        await inbox.mark_delivered(s, [item], f"c{dm.id}-i{item}", now)
    return finding.id, item


async def test_the_status_page_shows_a_findings_title_and_why_id_never_its_text(
    tmp_path: Path, database_url: str
) -> None:
    async with running_app(make_settings(tmp_path, database_url)) as app:
        finding_id, item_id = await seed_a_told_finding(app.services.db)
        async with app.http.get(f"{app.url}/status") as resp:
            page = await resp.text()
        async with app.http.get(f"{app.url}/status.json") as resp:
            data = await resp.text()
    for shown in (page, data):
        assert DM_SENTENCE not in shown and MAIL_SUBJECT not in shown
        assert html.escape(DM_SENTENCE) not in shown and "Globex" not in shown
        assert "Offer letter" not in shown
        assert f"/why {item_id}" in shown and f"discovery finding F-{finding_id}" in shown
    # The Bot's turn sent nothing for it: counted as not sent, never as delivered.
    assert "0 findings delivered, 0 queued for the Bot, 1 not sent" in page
