"""A merged forward opened: the messages it holds, shown with it (an Enricher:
bot/assistant/enrich.py) and kept as a source record, so search finds the forwarded words.

A `merge_forward` message arrives as a placeholder; the platform gives its messages on
request (`services.lookups`: Feishu's GET message returns the forward, then each message it
holds with `upper_message_id`). They are rendered one a line (time, sender, words, what they
carry), shown whole up to FORWARD_CHARS as quoted data (someone else's words), and stored
once as the record `<message_id>#forward` beside the message's (same source and scope: seen
exactly where the message is, and removed with it by a recall). A turn run again reads the
record instead of asking again. A forward that cannot be opened is one line; the message is
answered all the same.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from typing import TYPE_CHECKING

from bot.agent.framing import quote_data
from bot.channels.lookup import FoundMessage, MessageUnavailable
from storage.repos import originals, source_records
from storage.repos.source_records import NewRecord, is_tombstone
from storage.types import utcnow

if TYPE_CHECKING:
    from bot.assistant.turn_context import BatchItem, ConversationView
    from bot.services import Services

log = logging.getLogger(__name__)

FORWARD = "merge_forward"
FORWARD_CHARS = 6000  # shown to the model (the record keeps up to STORED_CHARS)
STORED_CHARS = 100_000
DEADLINE = 8.0
LINE_CHARS = 1000  # of one forwarded message


def forward_external_id(message_id: str) -> str:
    """Beside its message's record, so a recall (`<message_id>#…`) removes it too."""
    return f"{message_id}#forward"[:200]


async def forwarded_messages(
    services: Services, conversation: ConversationView, items: list[BatchItem]
) -> dict[int, list[str]]:
    forwards = [i for i in items if i.is_message and i.payload.get("message_type") == FORWARD]
    found: dict[int, list[str]] = {}
    for item in forwards:
        try:
            async with asyncio.timeout(DEADLINE):
                found[item.id] = [await _expanded(services, conversation, item)]
        except Exception as exc:  # one line, and the message goes on without it
            log.warning("could not open merged forward %s: %s", item.message_id, exc)
            found[item.id] = [f"(a merged forward I could not open: {_reason(exc)})"]
    return found


async def _expanded(services: Services, conversation: ConversationView, item: BatchItem) -> str:
    message_id = str(item.message_id or "")
    source = f"{conversation.platform}:{conversation.chat_id}"
    key, own = (source, forward_external_id(message_id)), (source, message_id)
    async with services.db.read() as tx:
        stored = await originals.records_by_key(tx, [key, own])
    if key in stored and not is_tombstone(stored[key].payload):
        text, count = stored[key].text, int(stored[key].payload.get("forwarded") or 0)
    else:
        lookup = services.lookups.get(conversation.platform)
        if lookup is None:
            raise MessageUnavailable(f"no way to read {conversation.platform} messages here")
        held = [m for m in (await lookup.message(message_id))[1:] if not m.deleted]
        text, count = render(services, held), len(held)
        message = stored.get(own)
        if message is not None and not is_tombstone(message.payload):
            await _store(services, message.source, message.scope, item, text, count)
    what = f"the {count} messages forwarded in {item.ref}"
    clipped = text[:FORWARD_CHARS] + (" …(more in search)" if len(text) > FORWARD_CHARS else "")
    return quote_data(what, clipped or "(empty)")


def render(services: Services, held: list[FoundMessage]) -> str:
    tz = services.settings.tz
    lines = []
    for m in held:
        when = m.sent_at.astimezone(tz).strftime("%Y-%m-%d %H:%M") if m.sent_at else "?"
        words = " ".join(m.text.split())[:LINE_CHARS]
        carries = f" (carries: {'; '.join(m.carries)})" if m.carries else ""
        lines.append(f"{when} {m.sender_id or 'unknown'}: {words}{carries}")
    return "\n".join(lines)


async def _store(
    services: Services, source: str, scope: str, item: BatchItem, text: str, count: int
) -> None:
    """Once (ON CONFLICT DO NOTHING: a recall's tombstone, or another turn's, wins)."""
    message_id = str(item.message_id)
    record = NewRecord(
        source=source,
        external_id=forward_external_id(message_id),
        scope=scope,
        text=text[:STORED_CHARS],
        sent_at=_sent_at(item),
        author=item.sender_id or None,
        title="merged forward",
        payload={"forwarded": count, "parent": message_id},
    )
    async with services.db.write() as tx:
        new = await source_records.insert_records(tx, [record], utcnow())
    if new:  # other replicas hear of it at commit (the table's trigger)
        services.notifier.wake_local(source_records.RECORDS_TOPIC)


def _sent_at(item: BatchItem) -> datetime:
    """The message's own time (its payload's), else when it came in."""
    try:
        return datetime.fromisoformat(str(item.payload.get("created_at")))
    except ValueError:
        return item.created_at


def _reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "it took too long"
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:200]
