"""The console page talks to the bot through the same ingest, inbox and outbox path."""

from __future__ import annotations

from pathlib import Path

from tests.apps import make_settings, running_app
from tests.echo_responder import EchoComponent
from tests.waiting import wait_until


async def test_console_dm_gets_a_reply_through_the_outbox(
    tmp_path: Path, database_url: str
) -> None:
    async with running_app(make_settings(tmp_path, database_url), bot=EchoComponent()) as app:
        async with app.http.get(f"{app.url}/console") as resp:
            assert resp.status == 200 and "Maka Assistant" in await resp.text()
        async with app.http.post(f"{app.url}/console/api/messages", json={"text": "hi"}) as resp:
            assert (await resp.json())["outcome"] == "answered"

        async def replied() -> bool:
            async with app.http.get(f"{app.url}/console/api/messages?chat=dm") as resp:
                messages = (await resp.json())["messages"]
            return any(m["from"] == "bot" and m["status"] == "sent" for m in messages)

        await wait_until(replied)
        async with app.http.get(f"{app.url}/console/api/messages?chat=dm") as resp:
            messages = (await resp.json())["messages"]
        assert [(m["from"], m["text"]) for m in messages] == [("user", "hi"), ("bot", "echo: hi")]


async def test_console_group_answers_only_when_mentioned(tmp_path: Path, database_url: str) -> None:
    async with running_app(make_settings(tmp_path, database_url), bot=EchoComponent()) as app:
        post = f"{app.url}/console/api/messages"
        async with app.http.post(post, json={"text": "chatter", "chat": "group"}) as resp:
            assert (await resp.json())["outcome"] == "history"
        async with app.http.post(
            post, json={"text": "you there?", "chat": "group", "mention": True}
        ) as resp:
            assert (await resp.json())["outcome"] == "answered"
        async with app.http.post(post, json={"text": ""}) as resp:
            assert resp.status == 400


async def test_console_is_off_when_a_feishu_app_is_configured(
    tmp_path: Path, database_url: str
) -> None:
    settings = make_settings(
        tmp_path,
        database_url,
        feishu_app_id="cli_a",
        feishu_app_secret="s",
        feishu_domain="http://127.0.0.1:9",
    )
    async with running_app(settings) as app, app.http.get(f"{app.url}/console") as resp:
        assert resp.status == 404
