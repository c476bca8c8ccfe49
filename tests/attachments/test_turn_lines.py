"""What a turn shows of a batch's files: one budget of text for them all, however many there
are; past it, each says where its text is read."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from sqlalchemy import update

from bot.assistant.turn_context import BatchItem, ConversationView
from bot.attachments.turn import BATCH_CHARS, attachment_lines
from bot.host.notify import Notifier
from storage.db import Database
from storage.models import Attachment
from storage.repos import attachments, source_records
from storage.repos.source_records import NewRecord
from storage.types import utcnow

SENT = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


@dataclass
class _Settings:
    attachment_wait_seconds: float = 5.0


async def _post_with_files(db: Database, n: int, chars: int) -> None:
    """Message om_1 in oc_group with `n` files, each read into `chars` characters."""
    now = utcnow()
    async with db.write() as tx:
        await attachments.add_many(
            tx,
            [
                attachments.NewAttachment(
                    platform="feishu",
                    message_id="om_1",
                    resource_key=f"img_{i}",
                    source="feishu:oc_group",
                    scope="group:oc_group",
                    kind="image",
                    name="",
                )
                for i in range(n)
            ],
            now,
        )
        new = await source_records.insert_records(
            tx,
            [
                NewRecord(
                    source="feishu:oc_group",
                    external_id=f"om_1#att:img_{i}",
                    scope="group:oc_group",
                    text=str(i % 10) * chars,
                    sent_at=SENT,
                    title="image",
                    payload={"attachment": {"name": "image", "kind": "image"}},
                )
                for i in range(n)
            ],
            now,
        )
        for record_id, _source, external_id in new:
            await tx.execute(
                update(Attachment)
                .where(Attachment.resource_key == external_id.split("#att:")[1])
                .values(state=attachments.DONE, record_id=record_id)
            )


def _item() -> BatchItem:
    payload: dict[str, Any] = {"message_id": "om_1", "platform": "feishu", "attachments": [{}]}
    return BatchItem(1, "user_message", payload, SENT)


async def test_thirty_files_show_the_model_one_budget_of_text_and_say_where_the_rest_is(
    db: Database,
) -> None:
    await _post_with_files(db, 30, 1000)
    services: Any = SimpleNamespace(db=db, notifier=Notifier(), settings=_Settings())
    view = ConversationView(1, "feishu", "oc_group", "group", "team")
    lines = (await attachment_lines(services, view, [_item()]))[1]
    shown = sum(len(line) for line in lines if line.startswith("<data"))
    assert len(lines) == 30
    assert BATCH_CHARS // 2 < shown <= BATCH_CHARS + 30 * 120  # the text plus its framing
    assert "read with memory_original('rec-" in lines[-1]
