"""A database with something to show on the status page: a source whose last sync failed,
an index whose check failed, a task paused on an error, a failed outbox row, two weeks of
model calls by several roles and Feishu API calls. Shared by the API tests and the browser
tests."""

from __future__ import annotations

from datetime import timedelta

from storage.db import Database
from storage.models import ApiUsage, ModelCall, OutboxMessage
from storage.repos import conversations, inbox, memory_indexes, outbox
from storage.repos import sources as source_repo
from storage.types import utcnow

SOURCE_ERROR = "IMAP login failed: authentication rejected"
NOTICE = "The index 'decisions' could not be kept up to date"
INDEX_ERROR = "checking for new records failed: database is locked"


async def seed_status(db: Database) -> None:
    now = utcnow()
    async with db.write() as s:
        await source_repo.ensure(s, name="email:INBOX", kind="email", scope="mail:INBOX",
                                 title="INBOX", now=now)  # fmt: skip
        source = await source_repo.get(s, "email:INBOX")
        assert source is not None
        source.last_error, source.last_error_at = SOURCE_ERROR, now
        index = await memory_indexes.create(
            s, name="decisions", criteria="decisions", scopes=None, conversation_id=None,
            created_by="ou_owner", interval_seconds=3600, now=now,
        )  # fmt: skip
        assert index is not None
        index.status, index.last_error, index.pending_count = "check_failed", INDEX_ERROR, None
        row_id = await outbox.enqueue(
            s, idempotency_key="status-seed-1", platform="feishu", chat_id="oc_x",
            conversation_id=None, content_type="text", content={"text": "hi"}, reply_to=None,
            in_thread=False, now=now,
        )  # fmt: skip
        assert row_id is not None
        failed = await s.get(OutboxMessage, row_id)
        assert failed is not None
        failed.state, failed.last_error = "failed", "chat not found"
        dm = await conversations.get_or_create(
            s, platform="feishu", chat_id="oc_owner_dm", chat_type="p2p", peer_open_id="ou_owner"
        )
        notice = await inbox.append(s, kind="index_notice", payload={"text": NOTICE},
                                    conversation_id=dm.id, created_at=now)  # fmt: skip
        assert notice is not None
        await inbox.mark_delivered(s, [notice], "batch-seed", now)
        for day in range(14):
            at = now - timedelta(days=day)
            for purpose, tokens in (("bot_turn", 900 + 50 * day), ("matter_turn", 400),
                                    ("index_turn", 250), ("judgement_turn", 120)):  # fmt: skip
                out = tokens // 10
                s.add(ModelCall(purpose=purpose, model="m", input_tokens=tokens,
                                output_tokens=out, latency_ms=5, created_at=at))  # fmt: skip
            s.add(ApiUsage(platform="feishu", api="im.message.create", day=at.date(),
                           calls=30 + day))  # fmt: skip
