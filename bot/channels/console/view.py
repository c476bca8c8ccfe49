"""What the console page shows of a conversation: the user's messages and the bot's outbox
rows, each content type of the outbox the way Feishu would show it. A `card_update` redraws
the card it names and a `reaction` is a badge on the message it names, so neither is a message
of its own. The page gets a card's button labels and styles, never their actions: a click
names the button by its index and the server reads the action from the stored card
(card_click.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.channels.cards import Card, CardUpdate, InvalidCard
from storage.models import InboundEvent, OutboxMessage, ProgressCard

# Content types that change another message instead of being one.
REACTION, UNREACTION, CARD_UPDATE = "reaction", "unreaction", "card_update"


def console_message_id(row_id: int) -> str:
    """The console's platform id of an outbox row's message (what ConsoleSender records)."""
    return f"console-{row_id}"


def row_id_of(message_id: str) -> int | None:
    """The outbox row behind a console message id; None if it names none."""
    number = message_id.removeprefix("console-")
    if number == message_id or not number.isascii() or not number.isdigit() or len(number) > 18:
        return None
    return int(number)


def latest_cards(rows: Sequence[OutboxMessage]) -> dict[str, Card]:
    """Each card of these rows as last drawn: its own content, or its latest valid update's.
    A stored card that cannot be read is left out (the page shows it as "[card]")."""
    cards: dict[str, Card] = {}
    for row in rows:  # in id order: a later update wins
        try:
            if row.content_type == "card":
                cards[console_message_id(row.id)] = Card.from_content(row.content)
            elif row.content_type == CARD_UPDATE:
                update = CardUpdate.from_content(row.content)
                if update.message_id in cards:
                    cards[update.message_id] = update.card
        except InvalidCard:
            continue
    return cards


def conversation(
    events: Sequence[InboundEvent],
    rows: Sequence[OutboxMessage],
    progress: Sequence[ProgressCard] = (),
) -> list[dict[str, Any]]:
    """The page's messages, oldest first; a progress card where it was made (in Feishu it is
    a message sent then, updated in place)."""
    badges = _badges(rows)
    cards = latest_cards(rows)
    items: list[dict[str, Any]] = [
        {
            "from": "user",
            "id": e.message_id,
            "sender": e.payload.get("sender_id"),
            "text": e.payload.get("text"),
            "at": e.received_at.isoformat(),
            "status": e.status,
            "reactions": badges.get(e.message_id, []),
        }
        for e in events
    ]
    for row in rows:
        if row.content_type in (REACTION, UNREACTION, CARD_UPDATE):
            continue
        item: dict[str, Any] = {
            "from": "bot",
            "id": console_message_id(row.id),
            "kind": "text",
            "at": row.created_at.isoformat(),
            "status": row.state,
        }
        card = cards.get(item["id"])
        if card is not None:
            item.update(kind="card", card=_card_for_page(card))
        elif row.content_type == "markdown":
            item.update(kind="markdown", text=str(row.content.get("text", "")))
        else:
            item["text"] = _reply_text(row.content_type, row.content)
        items.append(item)
    items += [
        {
            "from": "bot",
            "id": f"console-card-{p.id}",  # as ConsoleProgressSender records it
            "kind": "progress",
            "progress": {"title": p.title, "steps": list(p.steps), "status": p.status},
            "at": p.created_at.isoformat(),
            "status": "sent",
        }
        for p in progress
    ]
    items.sort(key=lambda item: str(item["at"]))
    return items


def _card_for_page(card: Card) -> dict[str, Any]:
    return {
        "title": card.title,
        "markdown": card.markdown,
        "buttons": [{"label": b.label, "style": b.style} for b in card.buttons],
        "note": card.note,
    }


def _badges(rows: Sequence[OutboxMessage]) -> dict[str, list[str]]:
    """Message id -> the emoji of the reactions on it still standing (an `unreaction` names
    the `reaction` row it undoes by that row's idempotency key)."""
    standing: dict[str, tuple[str, str]] = {}
    for row in rows:
        message_id, emoji = row.content.get("message_id"), row.content.get("emoji")
        if not isinstance(message_id, str) or not isinstance(emoji, str):
            continue
        if row.content_type == REACTION:
            standing[row.idempotency_key] = (message_id, emoji)
        elif row.content_type == UNREACTION:
            standing.pop(str(row.content.get("of", "")), None)
    badges: dict[str, list[str]] = {}
    for message_id, emoji in standing.values():
        badges.setdefault(message_id, []).append(emoji)
    return badges


def _reply_text(content_type: str, content: dict[str, Any]) -> str:
    if content_type == "text":
        return str(content.get("text", ""))
    if content_type == "post":
        title = content.get("title")
        paragraphs = [str(p) for p in content.get("paragraphs", [])]
        return "\n".join(([str(title)] if title else []) + paragraphs)
    return f"[{content_type}]"
