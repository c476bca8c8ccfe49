"""The Bot worker takes a conversation only once its burst is over, and waiting for that holds
no turn slot. Time here is the input's own: a test moves a burst's `created_at` into the past
(as if the window had passed) instead of sleeping through a window."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event, select, update

from bot.assistant import worker as bot_worker
from bot.llm.scripted import PlannedReply, ScriptedProvider
from bot.llm.types import Message, ToolSpec
from storage.models import Conversation, InboxItem
from storage.types import utcnow
from tests.assistant.support import bot_world, last_user_text, quiet, say, say_in_group
from tests.fakes import Mention
from tests.feishu_world import FeishuWorld, WorldFactory
from tests.waiting import wait_until

send = ScriptedProvider.tool_call
WINDOW = 30.0  # seconds of quiet a burst waits for: far longer than any test step takes


@pytest.fixture(autouse=True)
def a_long_longest_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """A burst is taken after MAX_DEBOUNCE even if it never goes quiet: out of the way here."""
    monkeypatch.setattr(bot_worker, "MAX_DEBOUNCE", 2 * WINDOW)


def answer_each_turn(messages: list[Message], _tools: list[ToolSpec]) -> PlannedReply:
    """Answer the turn's input in one reply, then sleep."""
    if messages[-1].role == "tool":
        return send("sleep", {})
    return send("send_user", {"text": "got: " + last_user_text(messages).split(": ", 1)[-1]})


def a_model(turns: int) -> ScriptedProvider:
    return ScriptedProvider([answer_each_turn] * (2 * turns))


async def window_passes(w: FeishuWorld, chat_id: str) -> None:
    """The quiet window of this chat's waiting input is over, as if time had passed."""
    async with w.app.services.db.write() as tx:
        conv = await tx.scalar(select(Conversation.id).where(Conversation.chat_id == chat_id))
        await tx.execute(
            update(InboxItem)
            .where(InboxItem.conversation_id == conv, InboxItem.delivered_at.is_(None))
            .values(created_at=utcnow() - timedelta(seconds=WINDOW + 1))
        )
    await w.app.services.notifier.notify("inbox")


async def test_a_burst_waits_for_quiet_and_reaches_the_model_as_one_batch(
    make_world: WorldFactory,
) -> None:
    model = a_model(1)
    async with bot_world(make_world, model, bot_debounce=WINDOW) as w:
        for text in ("one", "two", "three"):
            await say(w, text)
        await quiet(w, mid_turn=True)  # what could be answered has been: nothing, yet
        assert model.requests == [] and w.fake.sent == []
        await window_passes(w, "oc_owner_dm")

        async def answered() -> bool:
            return len(w.fake.sent) == 1

        await wait_until(answered, what="the burst's one reply")
        await quiet(w)
    [(messages, _)] = model.requests[:1]
    batch = last_user_text(messages)
    assert all(word in batch for word in ("one", "two", "three")), batch
    assert len(model.requests) == 2  # one turn: the reply, then sleep


async def test_a_conversation_still_gathering_holds_no_turn_slot(
    make_world: WorldFactory,
) -> None:
    """One turn slot: a burst still arriving in a group does not keep the owner's DM, whose
    input is ready, from being answered."""
    model = a_model(2)
    async with bot_world(make_world, model, bot_debounce=WINDOW, bot_concurrency=1) as w:
        await say_in_group(w, "still typing")
        await say(w, "ready")
        await window_passes(w, "oc_owner_dm")

        async def dm_answered() -> bool:
            return [m.text for m in w.fake.sent] == ["got: ready"]

        await wait_until(dm_answered, what="the ready DM answered while the group gathers")
        await window_passes(w, "oc_group")

        async def both_answered() -> bool:
            return len(w.fake.sent) == 2

        await wait_until(both_answered, what="the group answered once its window passed")
        await quiet(w)
    assert [m.text for m in w.fake.sent] == ["got: ready", "got: still typing"]


async def test_conversations_ready_together_start_together_and_each_is_answered_once(
    make_world: WorldFactory,
) -> None:
    """Six groups whose input becomes ready at once: their turns start in one grouped write,
    their leases taken in one statement for all of them (not one each), and each group gets
    its own answer, once."""
    chats = [f"oc_group_{n}" for n in range(6)]
    model = a_model(len(chats))
    lease_takes: list[list[str]] = []

    def count_lease_takes(_conn: Any, _cursor: Any, statement: str, params: Any, *_: Any) -> None:
        if statement.startswith("INSERT INTO leases"):
            values = params if isinstance(params, (list, tuple)) else [params]
            names = [str(v) for v in _flat(values) if str(v).startswith("bot:conversation:")]
            if names:
                lease_takes.append(names)

    async with bot_world(make_world, model, bot_debounce=WINDOW) as w:
        engine = w.app.services.db.session_engine
        event.listen(engine, "before_cursor_execute", count_lease_takes)
        try:
            for chat in chats:
                w.fake.add_chat(chat, name=chat)
                await say(
                    w,
                    f"@_user_1 hello from {chat}",
                    sender="ou_member",
                    chat_id=chat,
                    chat_type="group",
                    mentions=[Mention(open_id="ou_bot", name="Maka")],
                )
            await quiet(w, mid_turn=True)
            async with w.app.services.db.write() as tx:  # every window is over at once
                await tx.execute(
                    update(InboxItem)
                    .where(InboxItem.delivered_at.is_(None))
                    .values(created_at=utcnow() - timedelta(seconds=WINDOW + 1))
                )
            await w.app.services.notifier.notify("inbox")

            async def all_answered() -> bool:
                return len(w.fake.sent) >= len(chats)

            await wait_until(all_answered, what="an answer in each group")
            await quiet(w)
        finally:
            event.remove(engine, "before_cursor_execute", count_lease_takes)
    answers = {m.chat_id: m.content for m in w.fake.sent}
    assert len(w.fake.sent) == len(chats) and sorted(answers) == sorted(chats)
    assert all(f"hello from {chat}" in answers[chat] for chat in chats), answers
    taken = [name for names in lease_takes for name in names]
    assert len(set(taken)) == len(chats), lease_takes
    assert len(lease_takes) < len(chats), f"one statement per turn: {lease_takes}"


def _flat(values: Any) -> list[Any]:
    """Bound parameters as a flat list, whatever shape the driver got them in."""
    flat: list[Any] = []
    for value in values:
        if isinstance(value, dict):
            flat.extend(value.values())
        elif isinstance(value, (list, tuple)):
            flat.extend(_flat(value))
        else:
            flat.append(value)
    return flat
