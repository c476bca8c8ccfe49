"""Sending files through the Feishu fake, and reading what became of them."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from storage.models import Attachment, AttachmentBlob
from storage.repos import attachments
from tests.fakes import HistoryMessage
from tests.feishu_world import FeishuWorld
from tests.seed import OWNER
from tests.waiting import wait_until


async def send_file(
    w: FeishuWorld,
    name: str,
    data: bytes,
    *,
    key: str,
    chat_id: str = "oc_owner_dm",
    chat_type: str = "p2p",
    sender: str = OWNER,
    error: tuple[int, str] | None = None,
) -> str:
    """A file message, its bytes downloadable at the fake; its message id."""
    event = w.events.message_event(
        message_type="file",
        content={"file_key": key, "file_name": name},
        chat_id=chat_id,
        chat_type=chat_type,
        sender_open_id=sender,
    )
    msg = event["event"]["message"]
    message_id: str = msg["message_id"]
    w.fake.add_history(  # as Feishu has it: the receipt's reaction finds it
        chat_id,
        [
            HistoryMessage(
                message_id,
                chat_id,
                msg["content"],
                msg_type="file",
                create_time_ms=int(msg["create_time"]),
                sender_id=sender,
            )
        ],
    )
    w.fake.attach_resource(message_id, key, data, error=error)
    status, body = await w.events.post(event)
    assert status == 200, body
    return message_id


async def rows_of(w: FeishuWorld, message_id: str) -> list[Attachment]:
    async with w.app.services.db.read() as tx:
        return await attachments.of_messages(tx, "feishu", [message_id])


async def settled(w: FeishuWorld, message_id: str, timeout: float = 20.0) -> Attachment:
    """The message's one attachment, once it is final."""

    async def final() -> bool:
        rows = await rows_of(w, message_id)
        return len(rows) == 1 and rows[0].state in attachments.FINAL

    await wait_until(final, timeout, what=f"the attachment of {message_id} to be final")
    return (await rows_of(w, message_id))[0]


async def blob_count(w: FeishuWorld) -> int:
    async with w.app.services.db.read() as tx:
        return int(await tx.scalar(select(func.count()).select_from(AttachmentBlob)) or 0)


def user_texts(requests: list[Any]) -> list[str]:
    """Every user message the scripted model was shown, in order."""
    return [m.content or "" for messages, _tools in requests for m in messages if m.role == "user"]
