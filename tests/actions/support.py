"""Driving actions through the real Bot and the Feishu fake: the owner's approval card, its
buttons, and what reached each chat."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from storage.models import Action, OutboxMessage
from tests.fakes import SentMessage
from tests.feishu_world import OWNER, FeishuWorld
from tests.waiting import wait_until

OWNER_DM, GROUP = "oc_owner_dm", "oc_group"


def texts_in(w: FeishuWorld, chat_id: str) -> list[str]:
    """The text messages the bot created in a chat (what the chat's people saw)."""
    return [m.text or "" for m in w.fake.sent if m.chat_id == chat_id and m.msg_type == "text"]


def approval_cards(w: FeishuWorld) -> list[SentMessage]:
    return [
        m
        for m in w.fake.sent
        if m.chat_id == OWNER_DM
        and m.msg_type == "interactive"
        and json_title(m.body).startswith("Action #")
    ]


def json_title(card: dict[str, Any]) -> str:
    return str(card.get("header", {}).get("title", {}).get("content", ""))


def buttons(card: dict[str, Any]) -> dict[str, dict[str, str]]:
    """label -> the action its callback carries, from a card JSON 2.0."""
    found: dict[str, dict[str, str]] = {}
    for element in card["body"]["elements"]:
        for column in element.get("columns", []):
            for button in column["elements"]:
                found[button["text"]["content"]] = button["behaviors"][0]["value"]
    return found


async def the_approval_card(w: FeishuWorld, n: int = 1) -> SentMessage:
    """The `n`th approval card the owner got (waited for)."""

    async def arrived() -> bool:
        return len(approval_cards(w)) >= n

    await wait_until(arrived, what=f"{n} approval card(s) in the owner's DM")
    card = approval_cards(w)[n - 1]

    async def recorded() -> bool:  # the bot wrote down what Feishu answered (the DM's chat)
        async with w.app.services.db.read() as s:
            rows = await s.scalars(select(OutboxMessage.platform_message_ids))
            return any(card.message_id in (ids or []) for ids in rows.all())

    # A person clicks seconds after the card shows; a test would click within the moment
    # between Feishu taking the card and the sender recording it.
    await wait_until(recorded, what="the approval card's send recorded by the sender")
    return card


async def actions(w: FeishuWorld) -> list[Action]:
    async with w.app.services.db.read() as s:
        rows = await s.scalars(
            select(Action).order_by(Action.id).execution_options(populate_existing=True)
        )
        return list(rows.all())


async def settled(w: FeishuWorld, action_id: int, state: str) -> Action:
    async def reached() -> bool:
        return any(a.id == action_id and a.state == state for a in await actions(w))

    await wait_until(reached, what=f"action #{action_id} to be {state}")
    [row] = [a for a in await actions(w) if a.id == action_id]
    return row


async def click(
    w: FeishuWorld, card: SentMessage, label: str, *, by: str = OWNER, event_id: str | None = None
) -> dict[str, Any]:
    """A click on the card's button, as Feishu delivers it; the event (to replay it)."""
    event = w.events.card_action_event(
        value=buttons(card.body)[label],
        open_message_id=card.message_id,
        open_chat_id=card.chat_id,
        operator_open_id=by,
        event_id=event_id,
    )
    status, body = await w.events.post(event)
    assert status == 200, body
    return event
