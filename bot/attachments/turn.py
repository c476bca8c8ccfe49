"""The turn's view of a message's files (an Enricher, bot/assistant/enrich.py): under each
message that carries attachments, one block per attachment with the start of its text, as
data; or the one line saying it could not be read; or that it is still being read.

The turn waits for the files of the messages it answers, bounded (MAKA_ATTACHMENT_WAIT_
SECONDS): woken by every settled attachment (ATTACHMENTS_TOPIC), polling as a backstop. The
blocks of a batch share a budget of some BATCH_CHARS characters; a longer text ends with the
call that reads on (`memory_original('rec-N', offset=...)`), under the one visibility rule.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sqlalchemy import select

from bot.agent.framing import quote_data
from bot.attachments.records import KIND_LABELS, attachment_of, described
from storage.models import Attachment, SourceRecord
from storage.repos import attachments

if TYPE_CHECKING:
    from bot.assistant.turn_context import BatchItem, ConversationView
    from bot.services import Services

log = logging.getLogger(__name__)

BATCH_CHARS = 8000  # all the attachment text a batch shows the model
MIN_CHARS = 400  # however many files, each shows at least this much
POLL = 0.5  # seconds between looks when no wake-up comes (another replica's work)


async def attachment_lines(
    services: Services, conversation: ConversationView, items: list[BatchItem]
) -> dict[int, list[str]]:
    """Inbox item id -> the lines of its message's attachments."""
    wanted = {
        str(item.payload.get("message_id")): item.id
        for item in items
        if item.payload.get("attachments") and item.payload.get("message_id")
    }
    if not wanted:
        return {}
    platform = str(items[0].payload.get("platform") or conversation.platform)
    try:
        rows = await _settled(
            services, platform, list(wanted), services.settings.attachment_wait_seconds
        )
        texts = await _texts(services, [r.record_id for r in rows if r.state == attachments.DONE])
    except Exception:  # the message is answered anyway, saying what could not be done
        log.exception("attachments of %s could not be read for the turn", list(wanted))
        return {
            item: ["(its attachments could not be looked at just now)"] for item in wanted.values()
        }
    done = sum(1 for r in rows if r.state == attachments.DONE)
    share = max(MIN_CHARS, BATCH_CHARS // max(1, done))
    lines: dict[int, list[str]] = {}
    left = BATCH_CHARS  # a post of twenty images still shows the model at most this much
    for row in rows:
        item_id = wanted.get(row.message_id)
        if item_id is not None:
            allowed = min(share, left)
            lines.setdefault(item_id, []).append(_line(row, texts, allowed))
            if row.state == attachments.DONE and row.record_id in texts:
                left -= min(allowed, len(texts[row.record_id].text or ""))
    return lines


async def _settled(
    services: Services, platform: str, message_ids: Sequence[str], wait: float
) -> list[Attachment]:
    """The messages' attachment rows, once all are final or `wait` seconds have passed."""
    deadline = time.monotonic() + wait
    while True:
        with services.notifier.subscribe([attachments.ATTACHMENTS_TOPIC]) as woken:
            async with services.db.read() as tx:
                rows = await attachments.of_messages(tx, platform, message_ids)
            left = deadline - time.monotonic()
            if all(r.state in attachments.FINAL for r in rows) or left <= 0:
                return rows
            await woken.wait(min(POLL, left))


async def _texts(services: Services, record_ids: list[int | None]) -> dict[int, SourceRecord]:
    ids = [i for i in record_ids if i is not None]
    if not ids:
        return {}
    async with services.db.read() as tx:
        found = await tx.scalars(select(SourceRecord).where(SourceRecord.id.in_(ids)))
        return {r.id: r for r in found.all()}


def _line(row: Attachment, texts: dict[int, SourceRecord], share: int) -> str:
    name = row.name or KIND_LABELS.get(row.kind, row.kind)
    if row.state == attachments.DONE and row.record_id in texts:
        record = texts[row.record_id]
        info = attachment_of(record.payload) or {"name": name, "kind": row.kind}
        text = record.text or ""
        if not text.strip():
            return f"attachment {described(info)}: no text in it"
        if share <= 0:  # the batch's room is spent: say where it is
            return (
                f"attachment {described(info)}: {len(text)} characters, "
                f"read with memory_original('rec-{record.id}')"
            )
        shown = text[:share]
        block = quote_data(f"attachment {described(info)}", shown)
        rest = len(text) - len(shown)
        more = (
            f"\n({rest} more characters: memory_original('rec-{record.id}', offset={len(shown)}))"
        )
        return block + (more if rest > 0 else "")
    if row.state in (attachments.FAILED, attachments.PARKED):
        error = row.error or "could not read it"
        reason = error if error.startswith("could not read") else f"could not read: {error}"
        return f"attachment {name}: {reason}"
    if row.state == attachments.RECALLED:
        return f"attachment {name}: recalled"
    return f"attachment {name}: still being read; ask again in a moment"
