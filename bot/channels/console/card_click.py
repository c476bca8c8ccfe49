"""A click on a card's button in the console, made into the same InboundClick a Feishu
callback becomes. The page names the card and the button's index only: what the click means
is the action of that button on the card as last drawn, read from the outbox, so a page can
click only what the bot offered in that chat."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from bot.channels.clicks import InboundClick
from bot.channels.console.identity import CONSOLE_PLATFORM
from bot.channels.console.view import CARD_UPDATE, latest_cards, row_id_of
from storage.db import Database
from storage.models import OutboxMessage
from storage.types import utcnow


class RefusedClick(ValueError):
    """A click on nothing we offered; the text is the one-line reason (a 400)."""


@dataclass(frozen=True)
class Clicker:
    """Who clicks where: the page's identity and the chat it shows."""

    operator_id: str
    chat_id: str
    chat_type: str


async def click_on(
    db: Database, clicker: Clicker, message_id: str, button: int, click_id: str
) -> InboundClick:
    row_id = row_id_of(message_id)
    async with db.read() as tx:
        card_row = None if row_id is None else await tx.get(OutboxMessage, row_id)
        if card_row is None or card_row.platform != CONSOLE_PLATFORM:
            raise RefusedClick(f"no message {message_id} in the console")
        if card_row.chat_id != clicker.chat_id:
            raise RefusedClick(f"message {message_id} is in another chat")
        if card_row.content_type != "card":
            raise RefusedClick(f"message {message_id} is not a card")
        # Its updates are later rows of its chat; few, as each is a person's click.
        updates = (
            await tx.scalars(
                select(OutboxMessage)
                .where(
                    OutboxMessage.platform == CONSOLE_PLATFORM,
                    OutboxMessage.chat_id == card_row.chat_id,
                    OutboxMessage.content_type == CARD_UPDATE,
                    OutboxMessage.id > card_row.id,
                )
                .order_by(OutboxMessage.id)
            )
        ).all()
    card = latest_cards([card_row, *updates]).get(message_id)
    if card is None:
        raise RefusedClick(f"message {message_id} is a card that cannot be read")
    if not 0 <= button < len(card.buttons):
        raise RefusedClick(f"the card {message_id} has no button {button}")
    return InboundClick(
        platform=CONSOLE_PLATFORM,
        click_id=click_id,
        chat_id=card_row.chat_id,
        chat_type=clicker.chat_type,
        operator_id=clicker.operator_id,
        card_message_id=message_id,
        action=dict(card.buttons[button].action),
        created_at=utcnow(),
    )
