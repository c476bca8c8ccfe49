"""A click is stored once and handed to the Bot once; what a button may mean is checked."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from bot.channels.cards import Button, Card, CardUpdate, InvalidCard, parse_action
from bot.channels.clicks import InboundClick, InvalidClick
from bot.channels.feishu.card_action import NotAClick, normalize_click
from bot.channels.ingest import Ingest, Outcome
from bot.host.notify import Notifier
from storage.db import Database
from storage.models import InboundEvent, InboxItem
from storage.types import utcnow

PAUSE = {"command": "/matters pause 12"}


def click(click_id: str = "cb_1", **kw: object) -> InboundClick:
    values: dict[str, object] = {
        "platform": "feishu",
        "click_id": click_id,
        "chat_id": "oc_owner",
        "chat_type": "p2p",
        "operator_id": "ou_owner",
        "card_message_id": "om_card",
        "action": PAUSE,
        "created_at": utcnow(),
    }
    values.update(kw)
    return InboundClick(**values)  # type: ignore[arg-type]


async def test_redelivered_click_is_stored_once_and_reaches_the_bot_once(db: Database) -> None:
    ingest = Ingest(db, Notifier(), max_event_age=timedelta(minutes=30))
    results = await asyncio.gather(*(ingest.accept_click(click()) for _ in range(3)))
    assert sorted(r.outcome for r in results) == sorted(
        [Outcome.ANSWERED, Outcome.DUPLICATE, Outcome.DUPLICATE]
    )
    async with db.read() as s:
        events = list(await s.scalars(select(InboundEvent)))
        items = list(await s.scalars(select(InboxItem)))
    assert [(e.message_id, e.event_type) for e in events] == [("click-cb_1", "click")]
    assert [i.kind for i in items] == ["click"]
    assert items[0].conversation_id == results[0].conversation_id
    assert InboundClick.from_payload(items[0].payload) == click(
        created_at=InboundClick.from_payload(items[0].payload).created_at
    )


async def test_an_old_click_is_stored_but_not_acted_on(db: Database) -> None:
    ingest = Ingest(db, Notifier(), max_event_age=timedelta(minutes=30))
    result = await ingest.accept_click(click(created_at=utcnow() - timedelta(hours=2)))
    assert result.outcome is Outcome.STALE
    async with db.read() as s:
        assert list(await s.scalars(select(InboxItem))) == []


@pytest.mark.parametrize(
    "action",
    [
        {},
        {"command": "matters pause 12"},
        {"command": "/matters pause 12", "extra": "x"},
        {"finding": "seven", "verdict": "track"},
        {"finding": "7", "verdict": "love it"},
        {"answer": "Yes"},
        {"answer": 3, "question": "k"},
        {"answer": "x" * 301, "question": "k"},
        ["command", "/help"],
    ],
)
def test_an_action_that_is_not_one_of_ours_is_refused_in_one_line(action: object) -> None:
    with pytest.raises(InvalidCard) as refused:
        parse_action(action)
    assert "\n" not in str(refused.value)
    with pytest.raises(InvalidClick):
        click(action=action)


def test_a_card_reads_back_what_it_wrote_and_refuses_a_broken_one() -> None:
    card = Card(
        "Matter #12",
        "**Status**: running",
        (
            Button("Pause", PAUSE, "primary"),
            Button("Yes", {"answer": "Yes", "question": "bq1"}),
            Button("Not useful", {"finding": "7", "verdict": "not_useful"}, "danger"),
        ),
        note="Paused by ou_owner at 10:02",
    )
    assert Card.from_content(card.to_content()) == card
    update = CardUpdate("om_card", card)
    assert CardUpdate.from_content(update.to_content()) == update
    broken = card.to_content() | {"buttons": [{"label": "Go", "style": "loud", "action": PAUSE}]}
    with pytest.raises(InvalidCard, match="style"):
        Card.from_content(broken)
    with pytest.raises(InvalidCard, match="label"):
        Card.from_content(card.to_content() | {"buttons": [{"label": "", "action": PAUSE}]})


def _callback(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "schema": "2.0",
        "header": {"event_id": "ev_1", "create_time": "1764900000000", "token": "t"},
        "event": {
            "operator": {"open_id": "ou_owner"},
            "action": {"value": PAUSE, "tag": "button"},
            "context": {"open_message_id": "om_card", "open_chat_id": "oc_owner"},
        },
    }
    for path, value in changes.items():
        *parents, last = path.split("__")
        node = body
        for key in parents:
            node = node[key]
        if value is None:
            node.pop(last)
        else:
            node[last] = value
    return body


def test_a_feishu_callback_reads_as_the_click_it_is() -> None:
    read = normalize_click(_callback(), chat_type="p2p")
    assert read == click("ev_1", created_at=datetime.fromtimestamp(1764900000, UTC))


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"header__event_id": None}, "event_id is missing"),
        ({"header__create_time": "soon"}, "create_time"),
        ({"event__operator": None}, "operator is missing"),
        ({"event__context__open_message_id": 7}, "open_message_id is missing"),
        ({"event__action__value": {"command": "/x", "form": "y"}}, "not a known action"),
        ({"event__action__value": None}, "must be a non-empty object"),
        ({"header__event_id": "e" * 121}, "click id must be 1 to 120"),
    ],
)
def test_a_callback_that_is_not_a_click_of_ours_is_refused_in_one_line(
    changes: dict[str, Any], reason: str
) -> None:
    with pytest.raises(NotAClick, match=reason) as refused:
        normalize_click(_callback(**changes), chat_type="p2p")
    assert "\n" not in str(refused.value)
