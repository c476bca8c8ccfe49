"""The message a reply quotes, shown with the reply (an Enricher: bot/assistant/enrich.py).

A message with `parent_id` replies to another in the same chat. Its text is read from the
stored records (`<platform>:<chat_id>`, the parent's id) when there, else from the platform
(`services.lookups`, e.g. Feishu's GET message), and shown under the reply as quoted data:
someone else's words, never instructions. The parent is shown only when the conversation
may see it (the visibility rule, through the record's scope; a looked-up parent only when it
is in this very chat). One that cannot be had is one line saying so; the reply is answered
all the same.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from typing import TYPE_CHECKING

from bot.agent.framing import quote_data
from bot.assistant.visibility import visibility_of
from bot.channels.lookup import MessageUnavailable
from storage.models import Attachment
from storage.repos import attachments, originals
from storage.repos.source_records import is_tombstone

if TYPE_CHECKING:
    from bot.assistant.turn_context import BatchItem, ConversationView
    from bot.services import Services

log = logging.getLogger(__name__)

QUOTE_CHARS = 2000
DEADLINE = 8.0  # seconds for all of a batch's quotes (a lookup retries once, briefly)
CANNOT_SEE = "(replies to a message I cannot see)"
RECALLED = "(replies to a message its sender recalled)"


async def quoted_messages(
    services: Services, conversation: ConversationView, items: list[BatchItem]
) -> dict[int, list[str]]:
    replies = [i for i in items if i.is_message and i.payload.get("parent_id")]
    if not replies:
        return {}
    # A parent in the same batch is shown there already (every message of a Feishu thread
    # replies to its root): named, not repeated.
    refs = {i.message_id: i.ref for i in items if i.is_message and i.message_id}
    try:
        async with asyncio.timeout(DEADLINE):
            return {
                i.id: [
                    f"(replies to {refs[parent]} above)"
                    if (parent := str(i.payload["parent_id"])) in refs
                    else await _quote(services, conversation, i)
                ]
                for i in replies
            }
    except Exception as exc:  # never holds the batch back: each reply says it in a line
        log.warning("quotes of conversation %s: %s", conversation.id, exc)
        return {i.id: [CANNOT_SEE] for i in replies}


async def _quote(services: Services, conversation: ConversationView, item: BatchItem) -> str:
    parent_id = str(item.payload["parent_id"])
    source = f"{conversation.platform}:{conversation.chat_id}"  # chat records' source name
    async with services.db.read() as tx:
        stored = (await originals.records_by_key(tx, [(source, parent_id)])).get(
            (source, parent_id)
        )
        visibility = await visibility_of(tx, services.settings, conversation)
        carried = await attachments.of_messages(tx, conversation.platform, [parent_id])
    if stored is not None:
        if is_tombstone(stored.payload):
            return RECALLED
        if not visibility.sees_scope(stored.scope):
            return CANNOT_SEE
        return _shown(services, item, stored.author, stored.sent_at, stored.text, _named(carried))
    lookup = services.lookups.get(conversation.platform)
    if lookup is None:
        return CANNOT_SEE
    try:
        found = (await lookup.message(parent_id))[0]
    except MessageUnavailable as exc:
        log.info("the parent %s of a reply is unavailable: %s", parent_id, exc)
        return CANNOT_SEE
    if found.chat_id != conversation.chat_id:  # the parent is always in the same chat
        return CANNOT_SEE
    if found.deleted:
        return RECALLED
    return _shown(services, item, found.sender_id, found.sent_at, found.text, list(found.carries))


def _shown(
    services: Services,
    item: BatchItem,
    sender: str | None,
    sent_at: datetime | None,
    text: str,
    carries: list[str],
) -> str:
    when = sent_at.astimezone(services.settings.tz).strftime("%Y-%m-%d %H:%M") if sent_at else "?"
    what = f"the message {item.ref} replies to, from {sender or 'unknown'} at {when}"
    clipped = text[:QUOTE_CHARS] + (" …" if len(text) > QUOTE_CHARS else "")
    if carries:
        clipped += "\n(it carries: " + "; ".join(carries) + ")"
    return quote_data(what, clipped)


def _named(rows: list[Attachment]) -> list[str]:
    """The parent's attachments, each with the ref memory_original reads it by, or its state."""
    return [f"{r.kind} {r.name} ({f'rec-{r.record_id}' if r.record_id else r.state})" for r in rows]
