"""The console speaks as the owner (the embedded defaults have no MAKA_OWNER): /forget there
is the owner's, as /allow and /actions are, not refused as someone else's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.assistant.component import Assistant
from bot.forget.commands import OWNER_ONLY
from tests.apps import RunningApp, make_settings, running_app
from tests.waiting import wait_until


async def _bot_texts(app: RunningApp) -> list[str]:
    async with app.http.get(f"{app.url}/console/api/messages?chat=dm") as resp:
        assert resp.status == 200, await resp.text()
        messages: list[dict[str, Any]] = (await resp.json())["messages"]
    return [str(m["text"]) for m in messages if m["from"] == "bot"]


async def test_forget_in_the_console_is_the_owners(tmp_path: Path, database_url: str) -> None:
    async with running_app(make_settings(tmp_path, database_url), bot=Assistant()) as app:
        async with app.http.post(
            f"{app.url}/console/api/messages", json={"text": "/forget chat oc_nowhere"}
        ):
            pass

        async def answered() -> bool:
            return len(await _bot_texts(app)) >= 1

        await wait_until(answered, what="the console's answer to /forget")
        [answer] = await _bot_texts(app)
    assert answer != OWNER_ONLY
    # nothing is kept of that chat: said so, not a confirmation to send for nothing
    assert answer == "Nothing I keep matches chat oc_nowhere: there is nothing to forget.", answer
