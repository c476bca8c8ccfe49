"""The console speaks as the owner but has no Feishu account: /signin and /sync chats there
say where to do them, instead of calling the owner someone else."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.assistant.component import Assistant
from bot.owner.commands import FEISHU_ONLY
from bot.sync.chat_commands import FEISHU_ONLY as CHATS_ON_FEISHU
from tests.apps import RunningApp, make_settings, running_app
from tests.waiting import wait_until


async def _bot_texts(app: RunningApp) -> list[str]:
    async with app.http.get(f"{app.url}/console/api/messages?chat=dm") as resp:
        assert resp.status == 200, await resp.text()
        messages: list[dict[str, Any]] = (await resp.json())["messages"]
    return [str(m["text"]) for m in messages if m["from"] == "bot"]


async def test_signin_and_choosing_chats_in_the_console_say_to_do_it_on_feishu(
    tmp_path: Path, database_url: str
) -> None:
    async with running_app(make_settings(tmp_path, database_url), bot=Assistant()) as app:
        for text in ("/signin", "/signout", "/sync chats"):
            async with app.http.post(f"{app.url}/console/api/messages", json={"text": text}):
                pass

        async def both_answered() -> bool:
            return len(await _bot_texts(app)) >= 3

        await wait_until(both_answered, what="the console's answers to /signin, /signout, /sync")
        assert await _bot_texts(app) == [FEISHU_ONLY, FEISHU_ONLY, CHATS_ON_FEISHU]
