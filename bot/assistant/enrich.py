"""What a message carries beyond its own words, added to the batch before the model sees it:
an attachment's text, the message a reply quotes, a merged forward's messages.

Each enricher reads what it needs for a batch's messages and returns extra lines per inbox
item, already bounded; the lines are shown under the item (and logged with the turn, so the
next turns remember them). Enrichers run once per item, the first batch that holds it. One
that fails is logged and skipped: a message is never held back because what it carries could
not be read (the enricher itself says so in a line where it can).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from bot.assistant.forwards import forwarded_messages
from bot.assistant.quotes import quoted_messages
from bot.attachments.turn import attachment_lines

if TYPE_CHECKING:
    from bot.assistant.turn_context import BatchItem, ConversationView
    from bot.services import Services

log = logging.getLogger(__name__)

Enricher = Callable[
    ["Services", "ConversationView", "list[BatchItem]"], Awaitable[dict[int, list[str]]]
]

# The enrichers, in the order their lines appear under an item.
ENRICHERS: list[Enricher] = [attachment_lines, quoted_messages, forwarded_messages]

# Room kept in the model's input for the lines, when a batch may get some (enrichers bound
# their own output to fit in it): the history is fitted before they run.
RESERVED_TOKENS = 3000
_PLAIN = ("text", "post")


def may_enrich(items: list[BatchItem]) -> bool:
    """Whether any message could carry more than its words (a file, a quote, a forward)."""
    return any(
        item.is_message
        and (
            str(item.payload.get("message_type") or "text") not in _PLAIN
            or bool(item.payload.get("parent_id"))
            or bool(item.payload.get("attachments"))
        )
        for item in items
    )


async def enrich(
    services: Services, conversation: ConversationView, items: list[BatchItem]
) -> None:
    """Give each message not yet enriched its extra lines (`BatchItem.extra`)."""
    todo = [item for item in items if item.is_message and not item.enriched]
    if not todo:
        return
    for enricher in ENRICHERS:
        try:
            found = await enricher(services, conversation, todo)
        except Exception:  # one enricher's failure leaves the message as it is
            log.exception("enricher %s failed", getattr(enricher, "__name__", enricher))
            continue
        for item in todo:
            item.extra.extend(found.get(item.id, ()))
    for item in todo:
        item.enriched = True
