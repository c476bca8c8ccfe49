"""Input handed to a task that is cancelled is never left unread: what waits in the Matter
when it is cancelled (or was left there by an earlier version) is marked read, not acted on,
and the Bot of the conversation it came from is told which words were not acted on. Both
databases."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from bot.assistant.component import Assistant
from bot.host.notify import Notifier
from bot.llm.types import Message
from bot.matters.service import TOPIC, MatterService
from storage.db import Database
from storage.models import InboxItem, Matter
from storage.repos import matters
from storage.types import utcnow
from tests.assistant.support import last_user_text, replies, without_why
from tests.feishu_world import WorldFactory
from tests.matters.routed_model import RoutedModel, send
from tests.matters.test_session_lifecycle import delegate, delegation, header, unread
from tests.seed import owner_dm, task_session
from tests.waiting import wait_until


async def notes_to_the_bot(db: Database) -> list[InboxItem]:
    async with db.read() as s:
        rows = await s.scalars(
            select(InboxItem).where(InboxItem.kind == "task_update").order_by(InboxItem.id)
        )
        return list(rows.all())


async def test_input_waiting_in_a_matter_when_it_is_cancelled_is_answered_not_left_unread(
    db: Database,
) -> None:
    service = MatterService(db, Notifier())
    sid, mid = await delegate(db, "plan the team offsite")
    async with db.write() as s:
        conv = await owner_dm(s)
        s.add(delegation(sid, conv.id, "and book the train for 12 people", "second"))
    assert len(await unread(db, sid)) == 2

    assert await service.cancel(mid)

    assert await unread(db, sid) == []
    [note] = await notes_to_the_bot(db)
    assert note.conversation_id == conv.id and note.delivered_at is None  # the Bot's to read
    assert note.payload["update"] == "cancelled" and note.payload["matter_id"] == mid
    text = note.payload["text"]
    assert "2 message(s) handed to it were not acted on" in text
    assert "“plan the team offsite”" in text and "“and book the train for 12 people”" in text
    assert (await header(db, sid)).state == "cancelled"
    async with db.read() as s:
        matter = await s.get(Matter, mid)
        assert matter is not None and matter.status == "cancelled"
        assert not await matters.has_runnable(s, matter.updated_at)


async def test_a_cancel_with_nothing_unread_tells_the_bot_nothing(db: Database) -> None:
    service = MatterService(db, Notifier())
    sid, mid = await delegate(db, "plan the team offsite")
    async with db.write() as s:  # the first turn read the request
        items = await matters.unread_items(s, sid)
        for item in items:
            item.delivered_at = item.created_at
    assert await service.cancel(mid)
    assert await notes_to_the_bot(db) == []


async def test_input_an_earlier_version_left_in_a_cancelled_matter_is_answered_once(
    db: Database,
) -> None:
    service = MatterService(db, Notifier())
    sid, mid = await delegate(db, "renew the domain")
    async with db.write() as s:  # cancelled, its input left unread, as before this fix
        matter = await s.get(Matter, mid)
        assert matter is not None
        await matters.set_status(s, matter, "cancelled", matter.updated_at)
    assert len(await unread(db, sid)) == 1

    assert await service.answer_cancelled_input() == 1
    assert await service.answer_cancelled_input() == 0  # the worker runs it before each claim

    assert await unread(db, sid) == []
    [note] = await notes_to_the_bot(db)
    assert "1 message(s) handed to it were not acted on: “renew the domain”" in note.payload["text"]


async def test_the_user_hears_which_words_a_cancelled_task_left_unread(
    make_world: WorldFactory,
) -> None:
    """Through the running worker and Bot: input an earlier version left in a cancelled
    Matter is answered before the worker's next claim, and the Bot tells the user."""
    model = RoutedModel()
    bot_saw: list[str] = []

    def tell_user(messages: list[Message]) -> Any:
        bot_saw.append(last_user_text(messages))
        return send("send_user", {"text": "The offsite task was cancelled: I did not book it."})

    model.add("bot", tell_user, send("sleep", {}))
    async with make_world(bot=Assistant(), model_provider=model, bot_debounce=0.0) as w:
        db = w.app.services.db
        async with db.write() as s:  # one transaction: no turn ever sees it active
            conv = await owner_dm(s)
            task = await task_session(s, conv, "offsite")
            s.add(delegation(task.id, conv.id, "book the train for the offsite", "first"))
            await s.flush()
            matter = await matters.adopt(s, task.id, utcnow())
            assert matter is not None
            await matters.set_status(s, matter, "cancelled", utcnow())
        await w.app.services.notifier.notify(TOPIC)

        async def answered() -> bool:
            return await unread(db, task.id) == []

        await wait_until(answered, timeout=30, what="the cancelled task's input answered")
        [told] = await replies(w, 1)
    assert without_why(told) == "The offsite task was cancelled: I did not book it."
    assert "not acted on: “book the train for the offsite”" in bot_saw[0]
    assert model.calls["agent"] == 0  # a cancelled task runs no turn
