"""A Matter's progress card: made in the chat that asked for it when the Matter starts, a
line at each settle, done (streaming closed) when it completes; a cancelled Matter's card
ends interrupted."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import select

from bot.assistant.component import Assistant
from bot.llm.types import Message
from bot.matters.card import card_key
from bot.matters.service import MatterService
from storage.models import Matter, ProgressCard
from storage.repos import progress_cards
from storage.types import utcnow
from tests.assistant.support import cards, replies, without_why
from tests.feishu_world import FeishuWorld, WorldFactory
from tests.matters.routed_model import APPROVE, RoutedModel, send
from tests.matters.test_matters import _delegate, _settle, _status
from tests.waiting import wait_until


async def _card_shown(w: FeishuWorld, key: str, status: str) -> ProgressCard:
    async def shown() -> bool:
        async with w.app.services.db.read() as tx:
            card = await progress_cards.by_key(tx, key)
        return (
            card is not None
            and card.status == status
            and card.pushed_version == card.version
            and card.message_id is not None
        )

    await wait_until(shown, timeout=30, what=f"card {key} shown as {status}")
    async with w.app.services.db.read() as tx:
        card = await progress_cards.by_key(tx, key)
    assert card is not None
    return card


async def _matter_id(w: FeishuWorld, session_id: int) -> int:
    async with w.app.services.db.read() as tx:
        matter_id = await tx.scalar(select(Matter.id).where(Matter.session_id == session_id))
    assert matter_id is not None
    return int(matter_id)


async def test_a_matters_card_shows_each_settle_and_ends_done_when_it_completes(
    make_world: WorldFactory,
) -> None:
    model = RoutedModel()
    model.add("agent", send("events_read", {}), _settle(0, "continue", summary="read the report"))
    model.add("agent", _settle(1, "complete", summary="the report is fine"))
    model.add("review", APPROVE)

    def tell_user(_messages: list[Message]) -> Any:
        return send("send_user", {"text": "The report is fine."})

    model.add("bot", tell_user, send("sleep", {}))
    async with make_world(bot=Assistant(), model_provider=model, bot_debounce=0.0) as w:
        session_id = await _delegate(w, "check the report")
        await _status(w, session_id, "completed")
        matter_id = await _matter_id(w, session_id)
        row = await _card_shown(w, card_key(matter_id), progress_cards.DONE)
        assert [without_why(r) for r in await replies(w, 1)] == ["The report is fine."]
        [card] = cards(w)
    assert card.text == "- started\n- read the report\n- done: the report is fine"
    assert card.title == f"Task #{matter_id}: check the report"
    assert not card.streaming and row.streaming_closed
    assert row.chat_id == "oc_owner_dm"


async def test_a_cancelled_matters_card_ends_interrupted(make_world: WorldFactory) -> None:
    model = RoutedModel()

    def wait_an_hour(_messages: list[Message]) -> Any:
        wake_at = utcnow() + timedelta(hours=1)
        return _settle(0, "wait", wakes=[wake_at.isoformat()], waiting_for="the numbers")

    model.add("agent", send("events_read", {}), wait_an_hour)
    model.add("review", APPROVE)
    async with make_world(bot=Assistant(), model_provider=model, bot_debounce=0.0) as w:
        session_id = await _delegate(w, "wait for the numbers")
        await _status(w, session_id, "waiting")
        matter_id = await _matter_id(w, session_id)
        await _card_shown(w, card_key(matter_id), progress_cards.WORKING)
        assert await MatterService(w.app.services.db, w.app.services.notifier).cancel(matter_id)
        await _card_shown(w, card_key(matter_id), progress_cards.INTERRUPTED)
        [card] = cards(w)
    assert card.text == "- started\n- waiting: the numbers\n- cancelled"
