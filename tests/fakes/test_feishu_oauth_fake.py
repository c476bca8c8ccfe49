"""The Feishu fake's user sign-in behaves as the OAuth docs say: a code is single use and
lives 5 minutes; a refresh token is single use (rotation); errors are RFC 6749 shaped."""

from __future__ import annotations

import urllib.parse
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from tests.fakes import FeishuFake

REDIRECT = "https://maka.example.com/feishu/oauth/callback"


@pytest.fixture
async def fake() -> AsyncIterator[FeishuFake]:
    async with FeishuFake() as server:
        yield server


async def _code(fake: FeishuFake, http: aiohttp.ClientSession, app_id: str) -> str:
    query = urllib.parse.urlencode(
        {
            "client_id": app_id,
            "response_type": "code",
            "redirect_uri": REDIRECT,
            "scope": "offline_access calendar:calendar",
            "state": "s1",
        }
    )
    url = f"{fake.url}/open-apis/authen/v1/authorize?{query}"
    async with http.get(url, allow_redirects=False) as response:
        assert response.status == 302
        answer = urllib.parse.parse_qs(urllib.parse.urlsplit(response.headers["Location"]).query)
    assert answer["state"] == ["s1"]
    return answer["code"][0]


async def _token(
    fake: FeishuFake, http: aiohttp.ClientSession, body: dict[str, Any]
) -> tuple[int, dict[str, Any]]:
    url = f"{fake.url}/open-apis/authen/v2/oauth/token"
    async with http.post(url, json=body) as response:
        return response.status, await response.json()


async def test_a_code_is_single_use_and_short_lived(fake: FeishuFake) -> None:
    app_id, secret = fake.new_app()
    creds = {"client_id": app_id, "client_secret": secret, "redirect_uri": REDIRECT}
    async with aiohttp.ClientSession() as http:
        code = await _code(fake, http, app_id)
        status, body = await _token(
            fake, http, {"grant_type": "authorization_code", "code": code, **creds}
        )
        assert status == 200 and body["code"] == 0 and body["refresh_token"].startswith("ur-")
        status, body = await _token(
            fake, http, {"grant_type": "authorization_code", "code": code, **creds}
        )
        assert (status, body["code"], body["error"]) == (400, 20065, "invalid_grant")
        late = await _code(fake, http, app_id)
        fake.advance(301)
        status, body = await _token(
            fake, http, {"grant_type": "authorization_code", "code": late, **creds}
        )
        assert (status, body["code"]) == (400, 20004)


async def test_a_refresh_token_is_refused_after_use(fake: FeishuFake) -> None:
    app_id, secret = fake.new_app()
    creds = {"client_id": app_id, "client_secret": secret}
    async with aiohttp.ClientSession() as http:
        code = await _code(fake, http, app_id)
        grant = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT}
        _, first = await _token(fake, http, {**grant, **creds})
        refresh = {"grant_type": "refresh_token", "refresh_token": first["refresh_token"], **creds}
        status, second = await _token(fake, http, refresh)
        assert status == 200 and second["refresh_token"] != first["refresh_token"]
        status, again = await _token(fake, http, refresh)
        assert (status, again["code"], again["error"]) == (400, 20073, "invalid_grant")
        fake.advance(604800)
        later = {**refresh, "refresh_token": second["refresh_token"]}
        status, expired = await _token(fake, http, later)
        assert (status, expired["code"]) == (400, 20037)
