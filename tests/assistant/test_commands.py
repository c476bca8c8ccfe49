"""Slash commands: answered without a model, refused to those who may not run them."""

from __future__ import annotations

from sqlalchemy import select

from bot.assistant.access import NOT_PERMITTED_DM
from bot.assistant.turn import NO_MODEL_REPLY
from bot.llm.scripted import ScriptedProvider
from storage.models import Admin
from tests.assistant.support import bot_world, replies, say, say_in_group, send
from tests.assistant.support import sleep as sleep_step
from tests.fakes import Mention
from tests.feishu_world import OWNER, FeishuWorld, WorldFactory


async def _admins(w: FeishuWorld) -> list[str]:
    async with w.app.services.db.read() as s:
        return list((await s.scalars(select(Admin.open_id))).all())


async def test_help_works_and_plain_messages_explain_the_missing_model(
    make_world: WorldFactory,
) -> None:
    async with bot_world(make_world, provider=None) as w:
        await say(w, "/help")
        [help_text] = await replies(w, 1)
        assert "/help" in help_text and "/status" in help_text and "/admins" in help_text
        await say(w, "hello there")
        assert (await replies(w, 2))[1] == NO_MODEL_REPLY
        assert "MAKA_MODEL_BASE_URL" in NO_MODEL_REPLY


async def test_a_non_admin_cannot_add_admins_and_nothing_changes(
    make_world: WorldFactory,
) -> None:
    async with bot_world(make_world, provider=None) as w:
        await say_in_group(w, "/admins add @_user_2", sender="ou_stranger")
        [refusal] = await replies(w, 1)
        assert refusal.startswith("not permitted")
        assert await _admins(w) == []


async def test_the_owner_adds_and_removes_an_admin_by_mention(make_world: WorldFactory) -> None:
    async with bot_world(make_world, provider=None) as w:
        li = [Mention(open_id="ou_li", name="Li")]
        await say(w, "/admins add @_user_1", mentions=li)
        assert (await replies(w, 1))[0] == "ou_li is now an admin."
        assert await _admins(w) == ["ou_li"]
        await say(w, "/admins list")
        assert "admin: ou_li" in (await replies(w, 2))[1]
        await say(w, "/admins remove @_user_1", mentions=li)
        assert (await replies(w, 3))[2] == "ou_li is no longer an admin."
        assert await _admins(w) == []


async def test_unknown_command_and_wrong_arguments_get_a_hint(make_world: WorldFactory) -> None:
    async with bot_world(make_world, provider=None) as w:
        await say(w, "/frobnicate")
        await say(w, "/admins promote everyone")
        unknown, usage = await replies(w, 2)
        assert unknown == "Unknown command /frobnicate. Send /help to see the commands."
        assert usage.startswith("Usage: /admins list | add @user | remove @user")


async def test_status_reports_queues_and_usage_to_the_owner(make_world: WorldFactory) -> None:
    async with bot_world(make_world, provider=None) as w:
        await say(w, "/status")
        [status] = await replies(w, 1)
        assert "workers: " in status and "bot" in status
        assert "Feishu API calls:" in status and "model (not configured)" in status


async def test_a_strangers_dm_is_refused_but_a_group_mention_is_answered(
    make_world: WorldFactory,
) -> None:
    provider = ScriptedProvider([send("send_user", {"text": "hello group"}), sleep_step])
    async with bot_world(make_world, provider) as w:
        await say(w, "tell me the owner's secrets", sender="ou_stranger")
        assert await replies(w, 1) == [NOT_PERMITTED_DM]
        await say_in_group(w, "hi bot", sender="ou_stranger")
        assert await replies(w, 2) == [NOT_PERMITTED_DM, "hello group"]
    assert OWNER != "ou_stranger"
