"""How many calls the Feishu API client has in flight at once, over real HTTP on loopback."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from bot.channels.feishu.api import FeishuApi

TOKEN_PATH = "/open-apis/auth/v3/tenant_access_token/internal"


class HeldTogether:
    """Feishu's token and bot-info endpoints, bot info held until `n` calls are held at once."""

    def __init__(self, n: int) -> None:
        self.n, self.held = n, 0
        self.all_in = asyncio.Event()

    async def token(self, request: web.Request) -> web.Response:
        return web.json_response({"code": 0, "tenant_access_token": "t-held", "expire": 7200})

    async def bot_info(self, request: web.Request) -> web.Response:
        self.held += 1
        if self.held >= self.n:
            self.all_in.set()
        await self.all_in.wait()
        return web.json_response({"code": 0, "msg": "ok", "bot": {"open_id": "ou_bot"}})


class Uncounted:
    async def count(self, api: str) -> None:
        return None


@pytest.fixture
async def held_101() -> AsyncIterator[tuple[HeldTogether, str]]:
    server = HeldTogether(101)
    app = web.Application()
    app.router.add_post(TOKEN_PATH, server.token)
    app.router.add_get("/open-apis/bot/v3/info", server.bot_info)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    await web.SockSite(runner, sock).start()
    try:
        yield server, f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.all_in.set()
        await runner.cleanup()


async def test_more_calls_than_aiohttp_allows_by_default_are_in_flight_at_once(
    held_101: tuple[HeldTogether, str],
) -> None:
    # The callers' pools bound the calls (the sender delivers MAKA_BOT_CONCURRENCY at once,
    # up to 256); a connection limit of the client's own (aiohttp's default: 100) would
    # queue the rest, unseen, until the API's timeout.
    server, url = held_101
    api = FeishuApi(app_id="cli_held", app_secret="s", domain=url, usage=Uncounted(), timeout=300)
    try:
        async with asyncio.timeout(20):  # held forever if fewer than 101 get through
            bots = await asyncio.gather(*(api.bot_info() for _ in range(server.n)))
    except TimeoutError:
        pytest.fail(f"after 20 s, {server.held} of {server.n} calls were in flight at once")
    finally:
        await api.aclose()
    assert [b.open_id for b in bots] == ["ou_bot"] * server.n
