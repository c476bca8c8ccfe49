"""A Bot turn's model calls are recorded for its conversation (the status page's costs per
conversation), and under the Bot's purpose."""

from __future__ import annotations

from sqlalchemy import select

from bot.llm.scripted import ScriptedProvider
from storage.models import Conversation, ModelCall
from tests.assistant.support import bot_world, replies, say, send
from tests.feishu_world import WorldFactory


async def test_a_turns_model_calls_are_recorded_for_its_conversation(
    make_world: WorldFactory,
) -> None:
    provider = ScriptedProvider(
        [send("send_user", {"text": "hello back"}), ScriptedProvider.text("done")]
    )
    async with bot_world(make_world, provider) as w:
        await say(w, "hello")
        assert await replies(w, 1) == ["hello back"]
        async with w.app.services.db.read() as s:
            chat = await s.scalar(
                select(Conversation.id).where(Conversation.chat_id == "oc_owner_dm")
            )
            calls = (await s.execute(select(ModelCall.purpose, ModelCall.conversation_id))).all()
    assert chat is not None
    assert calls and set(calls) == {("bot_turn", chat)}
