"""Signing the owner in through the Feishu fake, as their browser would."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text

from bot.owner.signin import CALLBACK_PATH
from storage.models import OwnerToken
from storage.repos import owner_signin
from tests.assistant.support import bot_world, replies, say
from tests.feishu_world import FeishuWorld, WorldFactory

PUBLIC_URL = "https://maka.example.com"  # what Feishu sends the browser back to
SECRET_KEY = "test-secret-key-for-sealing-tokens"
LINK = re.compile(r"https?://\S+")


@asynccontextmanager
async def signin_world(
    make_world: WorldFactory, model: Any = None, **overrides: Any
) -> AsyncIterator[FeishuWorld]:
    """`model`: the Bot's scripted provider (none: commands only)."""
    overrides.setdefault("public_url", PUBLIC_URL)
    overrides.setdefault("secret_key", SECRET_KEY)
    async with bot_world(make_world, model, **overrides) as world:
        yield world


@dataclass
class Callback:
    status: int
    page: str
    url: str  # the callback address as the browser opened it (holds code and state)


async def ask_for_link(w: FeishuWorld, *, sent_before: int = 0) -> str:
    """The owner sends /signin; the authorization link in the answer."""
    await say(w, "/signin")
    answers = await replies(w, sent_before + 1)
    found = LINK.search(answers[-1])
    assert found, f"no link in the answer: {answers[-1]!r}"
    return found.group(0)


async def approve(w: FeishuWorld, link: str) -> str:
    """The browser opens the link; the fake's user approves; the callback address Feishu
    redirects to, made to reach the test's app (the public URL is its reverse proxy)."""
    async with w.app.http.get(link, allow_redirects=False) as response:
        assert response.status == 302, await response.text()
        location = response.headers["Location"]
    assert location.startswith(PUBLIC_URL + CALLBACK_PATH + "?"), location
    return w.app.url + location.removeprefix(PUBLIC_URL)


async def open_callback(w: FeishuWorld, url: str) -> Callback:
    async with w.app.http.get(url, allow_redirects=False) as response:
        return Callback(response.status, await response.text(), url)


async def sign_in(w: FeishuWorld, *, sent_before: int = 0) -> Callback:
    link = await ask_for_link(w, sent_before=sent_before)
    return await open_callback(w, await approve(w, link))


async def stored(w: FeishuWorld) -> OwnerToken | None:
    async with w.app.services.db.read() as tx:
        return await owner_signin.token(tx)


async def raw_rows(w: FeishuWorld) -> bytes:
    """Every byte of the sign-in tables as the database holds them."""
    dump = b""
    async with w.app.services.db.read() as tx:
        for table in ("owner_tokens", "owner_signin_states"):
            for row in (await tx.execute(text(f"SELECT * FROM {table}"))).all():
                for value in row:
                    raw = isinstance(value, bytes | memoryview)
                    dump += bytes(value) if raw else str(value).encode()
    return bytes(dump)


def token_calls(w: FeishuWorld, grant: str) -> int:
    return sum(
        1
        for r in w.fake.requests
        if r.path == "/open-apis/authen/v2/oauth/token"
        and isinstance(r.json, dict)
        and r.json.get("grant_type") == grant
    )
