"""The kept-alive transport to Feishu's Open API, over real HTTP on loopback."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from sources.feishu.sdk import AccessTokenType, BaseRequest, HttpMethod, RequestOption
from sources.feishu.transport import KeptAliveTransport


class HeldTogether:
    """A server that holds every request until `n` are held at once, then answers them all."""

    def __init__(self, n: int) -> None:
        self.n, self.held = n, 0
        self.all_in = asyncio.Event()

    async def handle(self, request: web.Request) -> web.Response:
        self.held += 1
        if self.held >= self.n:
            self.all_in.set()
        await self.all_in.wait()
        return web.json_response({"code": 0, "msg": "ok", "data": {}})


@pytest.fixture
async def held_101() -> AsyncIterator[tuple[HeldTogether, str]]:
    server = HeldTogether(101)
    app = web.Application()
    app.router.add_get("/open-apis/bot/v3/info", server.handle)
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


async def test_more_requests_than_aiohttp_allows_by_default_are_in_flight_at_once(
    held_101: tuple[HeldTogether, str],
) -> None:
    # The callers' pools bound the requests (the sender delivers MAKA_BOT_CONCURRENCY at
    # once, up to 256); a connection limit of the client's own (aiohttp's default: 100)
    # would queue the rest, unseen, until the API's timeout.
    server, url = held_101
    transport = KeptAliveTransport(url, timeout=300)
    request = (
        BaseRequest.builder()
        .http_method(HttpMethod.GET)
        .uri("/open-apis/bot/v3/info")
        .token_types({AccessTokenType.TENANT})
        .build()
    )
    option = RequestOption()
    option.tenant_access_token = "t-test"
    try:
        async with asyncio.timeout(20):  # held forever if fewer than 101 get through
            answers = await asyncio.gather(
                *(transport.send(request, option) for _ in range(server.n))
            )
    except TimeoutError:
        pytest.fail(f"after 20 s, {server.held} of {server.n} requests were in flight at once")
    finally:
        await transport.aclose()
    assert [a.raw.status_code for a in answers] == [200] * server.n
