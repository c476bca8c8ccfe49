"""The status page over HTTP, as an operator reaches it: the seeded problems show red with
what to do, the charts are drawn, the JSON carries the same data, the admin token is asked for
(bearer or login form) when set, nothing secret is shown, and off loopback without a token it
refuses everyone."""

from __future__ import annotations

import html
import re
from pathlib import Path

import aiohttp

from tests.apps import make_settings, running_app
from tests.web.status_seed import INDEX_ERROR, NOTICE, SOURCE_ERROR, seed_status

SECRET = "sk-model-key-Qw8e"


async def test_the_page_shows_what_is_red_with_what_to_do_and_draws_its_charts(
    tmp_path: Path, database_url: str
) -> None:
    settings = make_settings(tmp_path, database_url, model_api_key=SECRET)
    async with running_app(settings) as app:
        await seed_status(app.services.db)
        async with app.http.get(f"{app.url}/status") as resp:
            assert resp.status == 200
            page = await resp.text()
        async with app.http.get(f"{app.url}/status.json") as resp:
            assert resp.status == 200
            data = await resp.json()
    assert "need attention" in page
    assert SOURCE_ERROR in page and INDEX_ERROR in page
    assert page.count("What to do:") >= 3  # the source, the index, the failed outbox row
    assert "fix the credentials" in page and "could not check for new records" in page
    assert page.count('<svg class="chart"') == 2 and page.count("<rect ") >= 14
    assert SECRET not in page and SECRET not in str(data)
    assert [i["name"] for i in data["sources"] if i["red"]] == ["email:INBOX"]
    assert [i["state"] for i in data["indexes"]] == ["check_failed"]
    assert next(i for i in data["outbox"] if i["name"] == "failed")["state"] == "1"
    assert len(data["model_usage"]) == 14
    assert set(data["model_usage"][-1]["tokens"]) == {"Bot", "task agents", "indexers",
                                                      "discovery"}  # fmt: skip
    assert data["feishu_month_calls"] > 0 and data["feishu_quota"] == 10_000
    [unasked] = data["unasked"]  # what the assistant said on its own: its /why id, not its text
    assert unasked["name"].startswith("/why ") and unasked["state"] == "index_notice"
    assert "Said on its own (why)" in page and html.escape(NOTICE) not in page
    followers = [i for i in data["sources"] if i["name"].startswith("search index")]
    assert len(followers) == 2 and all(  # in words, not the dict the checkpoint is stored as
        re.fullmatch(r"indexed through entry \d+|nothing to index yet", i["detail"])
        for i in followers
    ), followers


async def test_with_a_token_the_page_asks_for_it_and_the_login_form_lets_the_admin_in(
    tmp_path: Path, database_url: str
) -> None:
    settings = make_settings(tmp_path, database_url, admin_token="open-sesame-4711")
    async with running_app(settings) as app:
        async with app.http.get(f"{app.url}/status") as resp:
            assert resp.status == 401
            assert "Admin token (MAKA_ADMIN_TOKEN)" in await resp.text()
        async with app.http.get(f"{app.url}/status.json") as resp:
            assert resp.status == 401
        bearer = {"Authorization": "Bearer open-sesame-4711"}
        async with app.http.get(f"{app.url}/status.json", headers=bearer) as resp:
            assert resp.status == 200
        async with app.http.post(f"{app.url}/status/login", data={"token": "guess"}) as resp:
            assert resp.status == 401 and "not the admin token" in await resp.text()
        # A browser keeps the cookie of 127.0.0.1; aiohttp's jar needs `unsafe` for an IP.
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as browser:
            async with browser.post(
                f"{app.url}/status/login", data={"token": "open-sesame-4711"},
                allow_redirects=False,
            ) as resp:  # fmt: skip
                assert resp.status == 303 and resp.headers["Location"] == "/status"
            async with browser.get(f"{app.url}/status") as resp:  # with the login's cookie
                assert resp.status == 200 and "Maka status" in await resp.text()
        evil = {"Origin": "http://evil.example"}
        async with app.http.post(
            f"{app.url}/status/login", data={"token": "open-sesame-4711"}, headers=evil
        ) as resp:
            assert resp.status == 403


async def test_off_loopback_without_a_token_the_page_refuses_everyone(
    tmp_path: Path, database_url: str
) -> None:
    settings = make_settings(tmp_path, database_url, http_host="0.0.0.0", console=False)
    async with running_app(settings) as app:
        for path in ("/status", "/status.json"):
            async with app.http.get(f"{app.url}{path}") as resp:
                assert resp.status == 403, path
                assert "MAKA_ADMIN_TOKEN" in await resp.text()
