"""The console page talks to the bot through the same ingest, inbox and outbox path, and only
its own page can drive it: same-origin JSON, loopback Host, and the token when one is set."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import pytest

from bot.config import ConfigError
from bot.web.guard import COOKIE
from storage.models import InboundEvent
from tests.apps import RunningApp, make_settings, running_app
from tests.echo_responder import EchoComponent
from tests.waiting import wait_until


async def _messages(app: RunningApp, query: str = "chat=dm") -> list[dict[str, Any]]:
    async with app.http.get(f"{app.url}/console/api/messages?{query}") as resp:
        assert resp.status == 200, await resp.text()
        return list((await resp.json())["messages"])


async def _stored(app: RunningApp) -> int:
    async with app.services.db.read() as s:
        return len((await s.scalars(InboundEvent.__table__.select())).all())


async def test_console_dm_gets_a_reply_through_the_outbox(
    tmp_path: Path, database_url: str
) -> None:
    async with running_app(make_settings(tmp_path, database_url), bot=EchoComponent()) as app:
        async with app.http.get(f"{app.url}/console") as resp:
            assert resp.status == 200 and "Maka Assistant" in await resp.text()
        async with app.http.post(f"{app.url}/console/api/messages", json={"text": "hi"}) as resp:
            assert (await resp.json())["outcome"] == "answered"

        async def replied() -> bool:
            return any(m["from"] == "bot" and m["status"] == "sent" for m in await _messages(app))

        await wait_until(replied, what="the echo reply marked sent")
        messages = await _messages(app)
        assert [(m["from"], m["text"]) for m in messages] == [("user", "hi"), ("bot", "echo: hi")]


async def test_the_pages_relative_api_url_resolves_to_the_console_api(
    tmp_path: Path, database_url: str
) -> None:
    """README sends people to /console: from there the script's URLs must reach the API
    (they used to resolve to /api/messages, a 404, so nothing typed was ever sent)."""
    async with running_app(make_settings(tmp_path, database_url), bot=EchoComponent()) as app:
        async with app.http.get(f"{app.url}/console") as resp:
            page, final = await resp.text(), str(resp.url)
        urls = set(re.findall(r"fetch\('([^'?]+)", page))
        assert urls == {"api/messages", "api/login", "api/clicks"}
        for relative in urls:
            resolved = urljoin(final, relative)
            assert resolved.startswith(f"{app.url}/console/api/"), resolved
        async with app.http.post(
            urljoin(final, "api/messages"), json={"text": "typed in the page"}
        ) as resp:
            assert resp.status == 200


async def test_console_group_answers_only_when_mentioned(tmp_path: Path, database_url: str) -> None:
    async with running_app(make_settings(tmp_path, database_url), bot=EchoComponent()) as app:
        post = f"{app.url}/console/api/messages"
        async with app.http.post(post, json={"text": "chatter", "chat": "group"}) as resp:
            assert (await resp.json())["outcome"] == "history"
        async with app.http.post(
            post, json={"text": "you there?", "chat": "group", "mention": True, "as": "member"}
        ) as resp:
            assert (await resp.json())["outcome"] == "answered"
        async with app.http.post(post, json={"text": ""}) as resp:
            assert resp.status == 400


async def test_a_cross_site_page_cannot_drive_the_console(
    tmp_path: Path, database_url: str
) -> None:
    async with running_app(make_settings(tmp_path, database_url), bot=EchoComponent()) as app:
        post = f"{app.url}/console/api/messages"
        evil = {"Origin": "http://evil.example"}
        body = '{"text": "/admins add ou_evil"}'
        attempts = [
            # what an HTML form or a no-cors fetch on another site can send without preflight
            {"data": body, "headers": {**evil, "Content-Type": "text/plain"}},
            {"data": "text=hi", "headers": {"Content-Type": "application/x-www-form-urlencoded"}},
            {"data": body, "headers": {**evil, "Content-Type": "application/json"}},
            {
                "data": body,
                "headers": {"Sec-Fetch-Site": "cross-site", "Content-Type": "application/json"},
            },
            # a DNS-rebinding page reaches 127.0.0.1 under its own host name
            {"data": body, "headers": {"Host": "evil.example", "Content-Type": "application/json"}},
        ]
        statuses = []
        for attempt in attempts:
            async with app.http.post(post, **attempt) as resp:
                statuses.append(resp.status)
        assert statuses == [403, 415, 403, 403, 403]
        assert await _stored(app) == 0


async def test_the_sender_is_one_of_the_offered_identities_never_an_id_from_the_request(
    tmp_path: Path, database_url: str
) -> None:
    async with running_app(make_settings(tmp_path, database_url), bot=EchoComponent()) as app:
        post = f"{app.url}/console/api/messages"
        async with app.http.post(post, json={"text": "hi", "sender": "ou_someone"}) as resp:
            assert resp.status == 400 and "sender" in await resp.text()
        async with app.http.post(post, json={"text": "hi", "as": "ou_someone"}) as resp:
            assert resp.status == 400
        async with app.http.post(post, json={"text": "hello", "as": "member"}) as resp:
            assert resp.status == 200
        assert await _stored(app) == 1
        member_dm = await _messages(app, "chat=dm&as=member")
        assert [(m["sender"], m["text"]) for m in member_dm if m["from"] == "user"] == [
            ("ou_console_member", "hello")
        ]
        assert await _messages(app, "chat=dm") == []  # the owner's DM is another chat


async def test_with_a_token_the_console_asks_for_it(tmp_path: Path, database_url: str) -> None:
    settings = make_settings(tmp_path, database_url, admin_token="open-sesame-4711")
    async with running_app(settings, bot=EchoComponent()) as app:
        api = f"{app.url}/console/api"
        async with app.http.get(f"{app.url}/console/") as resp:
            assert resp.status == 200  # the page itself, which then asks for the token
        async with app.http.post(f"{api}/messages", json={"text": "hi"}) as resp:
            assert resp.status == 401
        async with app.http.get(f"{api}/messages?chat=dm") as resp:
            assert resp.status == 401
        async with app.http.post(f"{api}/login", json={"token": "wrong"}) as resp:
            assert resp.status == 401
        bearer = {"Authorization": "Bearer open-sesame-4711"}
        async with app.http.post(f"{api}/messages", json={"text": "hi"}, headers=bearer) as resp:
            assert resp.status == 200
        async with app.http.post(f"{api}/login", json={"token": "open-sesame-4711"}) as resp:
            assert resp.status == 200
            cookie = resp.cookies[COOKIE]
        assert "open-sesame-4711" not in cookie.value
        assert cookie["httponly"] and cookie["samesite"] == "Strict"
        # (aiohttp's client keeps no cookies for IP hosts; a browser sends it back by itself)
        login = {"Cookie": f"{COOKIE}={cookie.value}"}
        async with app.http.post(f"{api}/messages", json={"text": "again"}, headers=login) as resp:
            assert resp.status == 200
        assert await _stored(app) == 2


async def test_console_is_off_when_a_feishu_app_is_configured(
    tmp_path: Path, database_url: str
) -> None:
    settings = make_settings(
        tmp_path,
        database_url,
        feishu_app_id="cli_a",
        feishu_app_secret="s",
        feishu_verification_token="t",
        feishu_domain="http://127.0.0.1:9",
    )
    async with running_app(settings) as app, app.http.get(f"{app.url}/console") as resp:
        assert resp.status == 404


def test_the_console_is_not_served_off_loopback_without_a_token(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as refused:
        make_settings(tmp_path, "sqlite:///x.db", http_host="0.0.0.0")
    assert refused.value.lines == [
        "MAKA_ADMIN_TOKEN: the console (/console) on MAKA_HTTP_HOST=0.0.0.0 needs "
        "MAKA_ADMIN_TOKEN (or set MAKA_CONSOLE=false)"
    ]
    for fine in (
        {"http_host": "0.0.0.0", "admin_token": "t"},
        {"http_host": "0.0.0.0", "console_token": "t"},  # the earlier name still works
        {"http_host": "0.0.0.0", "console": False},
        {"http_host": "::1"},
        {"http_host": "localhost"},
    ):
        make_settings(tmp_path, "sqlite:///x.db", **fine)


HOSTILE_BODIES = {  # each a raw body sent as application/json; what the 400 says
    "nested 100,000 deep": ("[" * 100_000, "nested deeper than 64"),
    "a NUL in the text": ('{"text": "a\\u0000b"}', "NUL or a lone surrogate"),
    "a lone surrogate": ('{"text": "a\\ud800b"}', "NUL or a lone surrogate"),
    "a NUL in a key": ('{"text": "hi", "a\\u0000": 1}', "NUL or a lone surrogate"),
    "not UTF-8": (b'{"text": "\xff\xfe"}', "not JSON"),
    "a number of 5000 digits": ('{"text": "hi", "n": ' + "9" * 5000 + "}", "5000 digits"),
    "NaN": ('{"text": NaN}', "NaN is not a JSON number"),
    "not an object": ('["text", "hi"]', "not a JSON object"),
    "empty": ("", "not JSON"),
}


@pytest.mark.parametrize("route", ["messages", "login", "clicks"])
async def test_a_body_that_cannot_be_read_or_stored_is_a_400_with_one_json_line(
    tmp_path: Path, database_url: str, route: str
) -> None:
    """The console reads JSON with the webhook's bounded reader: '[' * 100000 was a 500
    (RecursionError), and "a\\u0000b" a 500 on PostgreSQL, which cannot store a NUL."""
    settings = make_settings(tmp_path, database_url, admin_token="open-sesame-4711")
    bearer = {"Authorization": "Bearer open-sesame-4711", "Content-Type": "application/json"}
    async with running_app(settings, bot=EchoComponent()) as app:
        for what, (body, why) in HOSTILE_BODIES.items():
            async with app.http.post(
                f"{app.url}/console/api/{route}", data=body, headers=bearer
            ) as resp:
                assert resp.status == 400, what
                error = (await resp.json())["error"]
            assert why in error and "\n" not in error, (what, error)
        assert await _stored(app) == 0
        async with app.http.post(
            f"{app.url}/console/api/messages", json={"text": "still fine"}, headers=bearer
        ) as resp:
            assert resp.status == 200
        assert await _stored(app) == 1
