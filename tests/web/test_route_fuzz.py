"""No HTTP input is answered with a 5xx: every route of the real app (health, status page,
console, Feishu webhook, enumerated from its router, so a new route joins by itself) gets
hostile bodies, content types, query strings and headers, logged in and not, and some
malformed requests straight over a socket. With the database stopped, the one 5xx allowed is
the documented 503 (tests/web/test_database_down.py) on the routes that need the database."""

from __future__ import annotations

import asyncio
import json
import logging
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.web.guard import COOKIE, cookie_value
from bot.web.login_limits import LOGIN_LIMITS
from tests import databases
from tests.apps import RunningApp, make_settings, running_app
from tests.echo_responder import EchoComponent
from tests.fakes import FeishuEventSender, FeishuFake
from tests.feishu_world import ENCRYPT_KEY, VERIFICATION_TOKEN
from tests.seed import OWNER
from tests.waiting import wait_until
from tests.web.database_outage import switchable

TOKEN = "open-sesame-4711"
LOGGED_IN = {"Cookie": f"{COOKIE}={cookie_value(TOKEN)}"}  # a cookie: no login limit to trip
ROUTES = {  # every route the app has; the test fails when one is added without being listed
    ("GET", "/healthz"), ("GET", "/readyz"), ("GET", "/metrics"),
    ("GET", "/status"), ("GET", "/status.json"), ("POST", "/status/login"),
    ("GET", "/console"), ("GET", "/console/"), ("POST", "/console/api/login"),
    ("GET", "/console/api/messages"), ("POST", "/console/api/messages"),
    ("POST", "/console/api/clicks"),
    ("POST", "/feishu/events"), ("GET", "/feishu/oauth/callback"),
}  # fmt: skip
NEEDS_THE_DATABASE = {
    "/readyz", "/status", "/status.json", "/console/api/messages", "/feishu/oauth/callback",
}  # fmt: skip

BODIES = [
    b"",
    b"[" * 100_000,
    b'{"a":' * 20_000,
    b'{"text": "a\\u0000b"}',
    b'{"text": "\\ud800", "token": "\\udfff"}',
    b'{"text": "caf\xc3", "token": "\xff\xfe"}',
    b"\xff\xfe\xfd\x00",
    b"[1, 2, 3]",
    b'"just a string"',
    b"1" + b"0" * 5000,
    b'{"text": 1e999, "token": NaN}',
    b'{"text": "' + b"x" * 30_000 + b'"}',
    b'{"text": "hi", "chat": {"nested": [[[]]]}, "as": ["owner"], "mention": "yes"}',
    b'{"text": "hi", "chat": "group", "mention": true, "as": "member"}',
    b'{"token": "guess", "extra": 1}',
    b"token=%00%ff%fe&token=" + b"A" * 5000,
    b'--x\r\nContent-Disposition: form-data; name="token"\r\n\r\n\xff\x00\r\n--x--\r\n',
    b'--x\r\nContent-Disposition: form-data; name="token"; filename="a"\r\n\r\nzz',
    b"x" * (2 * 1024 * 1024),  # over the server's 1 MiB
]
CONTENT_TYPES = [
    "application/json",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "multipart/form-data",
    "text/plain; charset=utf-9",
    "application/json; charset=latin-1",
]
QUERIES = [
    "",
    "?chat=%00&as=%ff%fe",
    "?chat=group&as=member",
    "?chat=dm&chat=group&as[]=1&%00=%00",
    "?" + "&".join(f"k{i}=v" for i in range(1000)),
    "?code=%00&state=%ff%fe%00",
    "?code=c&state=" + "s" * 5000,
    "?error=access_denied&state=x",
]
HEADERS: list[dict[str, str]] = [
    {},
    LOGGED_IN,
    {**LOGGED_IN, "Origin": "null"},
    {**LOGGED_IN, "Sec-Fetch-Site": "cross-site", "Accept": "text/html"},
    {"Authorization": "Bearer " + "x" * 6000},
    {"Authorization": "Basic Zm9vOmJhcg=="},
    {"Cookie": f"{COOKIE}=%00; {COOKIE}=\\; x=\u00ff"},
    {**LOGGED_IN, "X-Forwarded-For": "::::, 999.1.1.1", "X-Forwarded-Proto": "gopher"},
    {**LOGGED_IN, "X-Forwarded-For": ",,,", "X-Forwarded-Host": "", "Origin": "https://"},
    {**LOGGED_IN, "Host": "[::1"},
    {**LOGGED_IN, "Host": "evil.example"},
]
RAW_REQUESTS = [  # what no well-behaved client sends: aiohttp's parser answers these itself
    b"GET /status\x00 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"GET /status HTTP/1.1\r\nHost: \xff\xfe\r\n\r\n",
    b"GET /console/api/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: maka_admin=\xff\x00\r\n\r\n",
    b"GET /status.json HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: maka_admin=\xff\xfe\r\n\r\n",
    b"GET /status.json HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \xff\xfe\r\n\r\n",
    b"GET /status.json HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: \xff, [::1\r\n"
    b"X-Forwarded-Proto: \xff\r\nX-Forwarded-Host: \xfe\r\nOrigin: \xff\r\n\r\n",
    b"POST /console/api/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -1\r\n\r\n",
    b"POST /console/api/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 9"
    + b"9" * 30
    + b"\r\n\r\n",
    b"POST /status/login HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    b"GET /" + b"a" * 20_000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"b" * 20_000 + b"\r\n\r\n",
    b"BREW /status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
]


@asynccontextmanager
async def full_app(
    tmp_path: Path, database_url: str, fake: FeishuFake
) -> AsyncIterator[RunningApp]:
    """Every route on: the console beside a Feishu app in webhook mode, with a token, behind
    a trusted proxy (this test's requests come from it: its X-Forwarded-* are read)."""
    app_id, app_secret = fake.new_app()
    settings = make_settings(
        tmp_path, database_url, console=True, admin_token=TOKEN, owner=OWNER,
        feishu_app_id=app_id, feishu_app_secret=app_secret, feishu_encrypt_key=ENCRYPT_KEY,
        feishu_verification_token=VERIFICATION_TOKEN, feishu_domain=fake.url,
        trusted_proxies="127.0.0.0/8", public_url="https://maka.example.com",
        secret_key="fuzz-secret-key",  # the OAuth callback reads its state from the database
    )  # fmt: skip
    async with running_app(settings, bot=EchoComponent()) as app:
        limits = app.app[LOGIN_LIMITS]  # every body reaches the code past the login limit
        limits.per_client = limits.overall = 1_000_000  # (its 429 is tested in test_logins)
        yield app


def routes_of(app: RunningApp) -> set[tuple[str, str]]:
    return {
        (route.method, route.resource.canonical)
        for route in app.app.router.routes()
        if route.resource is not None and route.method != "HEAD"
    }


async def answers(app: RunningApp) -> list[tuple[int, str, str]]:
    """(status, method, what was sent) for every hostile request to every route."""
    timeout = aiohttp.ClientTimeout(total=30)  # a hang fails the test, it does not stall it
    seen: list[tuple[int, str, str]] = []

    async def send(method: str, path: str, **kwargs: object) -> None:
        async with app.http.request(
            method,
            f"{app.url}{path}",
            timeout=timeout,
            allow_redirects=False,
            **kwargs,  # type: ignore[arg-type]
        ) as resp:
            await resp.read()
            seen.append((resp.status, method, f"{path} {str(kwargs)[:120]}"))

    for method, path in sorted(routes_of(app)):
        if method == "POST":
            for body in BODIES:
                await send(
                    method,
                    path,
                    data=body,
                    headers={**LOGGED_IN, "Content-Type": "application/json"},
                )
            for content_type in CONTENT_TYPES:
                for body in (BODIES[0], BODIES[5], BODIES[16]):
                    await send(
                        method, path, data=body, headers={**LOGGED_IN, "Content-Type": content_type}
                    )
            for headers in HEADERS:
                await send(method, path, data=b'{"text": "hi", "token": "x"}', headers=headers)
        else:
            await send("HEAD", path, headers=LOGGED_IN)
            for query in QUERIES:
                await send(method, path + query, headers=LOGGED_IN)
            for headers in HEADERS:
                await send(method, path, headers=headers)
    for raw in RAW_REQUESTS:
        seen.append((await send_raw(app, raw), "RAW", repr(raw[:60])))
    return seen


async def send_raw(app: RunningApp, request: bytes) -> int:
    host, port = app.url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(request)
        await writer.drain()
        async with asyncio.timeout(30):
            status_line = await reader.readline()
    finally:
        writer.close()
    return int(status_line.split()[1])


async def test_no_route_answers_a_5xx_to_hostile_input(
    tmp_path: Path, database_url: str, fake: FeishuFake
) -> None:
    async with full_app(tmp_path, database_url, fake) as app:
        assert routes_of(app) == ROUTES
        seen = await answers(app)
        assert len(seen) > 300
        assert [s for s in seen if s[0] >= 500] == []
        assert {s[0] for s in seen} >= {200, 400, 401, 403, 413, 415}


async def test_with_the_database_stopped_the_only_5xx_is_the_documented_503(
    tmp_path: Path, postgres_run_database: str, fake: FeishuFake
) -> None:
    async with switchable(postgres_run_database) as (switch, url):
        async with full_app(tmp_path, url, fake) as app:
            events = FeishuEventSender(
                f"{app.url}/feishu/events", app_id=app.services.settings.feishu_app_id or "",
                encrypt_key=ENCRYPT_KEY, verification_token=VERIFICATION_TOKEN,
            )  # fmt: skip
            await switch.stop()
            seen = await answers(app)
            # a real event that cannot be stored: 503, so that Feishu delivers it again
            status, _ = await events.post(events.message_event(text="hi", chat_id="oc_dm"))
            await switch.start()
        assert status == 503
        documented = [s for s in seen if s[0] == 503 and _path(s) in NEEDS_THE_DATABASE]
        unexpected = [s for s in seen if s[0] >= 500 and s not in documented]
        assert unexpected == []
        assert documented  # the database really was down


def _path(answer: tuple[int, str, str]) -> str:
    return answer[2].split()[0].split("?")[0]


UNSTORABLE_CHARS = st.sampled_from(["\x00", "\ud800", "\udfff", "\ufffd", "é", "\u2028"])
TEXT = st.text(alphabet=st.one_of(st.characters(), UNSTORABLE_CHARS), max_size=40)
KEYS = st.one_of(st.sampled_from(["text", "chat", "mention", "as", "token", "type"]), TEXT)
JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), TEXT),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=12,
)
NEAR_VALID = st.fixed_dictionaries(  # a console message, with what may be wrong in it
    {"text": TEXT},
    optional={
        "chat": st.sampled_from(["dm", "group", "", "DM"]),
        "as": st.sampled_from(["owner", "admin", "member", "ou_someone"]),
        "mention": st.one_of(st.booleans(), TEXT),
    },
)
BODY = st.one_of(
    st.binary(max_size=300),
    NEAR_VALID.map(lambda v: json.dumps(v, ensure_ascii=True).encode()),
    JSON_VALUES.map(lambda v: json.dumps(v, ensure_ascii=True).encode()),  # \u0000, \ud800
    st.dictionaries(KEYS, JSON_VALUES, max_size=5).map(
        lambda v: json.dumps(v, ensure_ascii=True).encode()
    ),
)


async def test_generated_bodies_and_content_types_are_never_a_5xx(
    tmp_path: Path, database_url: str, fake: FeishuFake
) -> None:
    async with full_app(tmp_path, database_url, fake) as app:
        urls = sorted(f"{app.url}{path}" for method, path in routes_of(app) if method == "POST")
        statuses: list[int] = []

        @settings(
            max_examples=120,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture],
        )
        @given(
            url=st.sampled_from(urls),
            body=BODY,
            content_type=st.sampled_from(CONTENT_TYPES),
            logged_in=st.booleans(),
        )
        def post(url: str, body: bytes, content_type: str, logged_in: bool) -> None:
            headers: dict[str, Any] = {"Content-Type": content_type}
            if logged_in:
                headers.update(LOGGED_IN)
            request = urllib.request.Request(url, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=30) as resp:
                    status = int(resp.status)
            except urllib.error.HTTPError as err:
                status = err.code
            statuses.append(status)
            assert status < 500, (url, body[:200], content_type)

        await asyncio.to_thread(post)  # the app answers on this loop meanwhile
        assert len(statuses) >= 100 and 400 in statuses


async def test_a_request_the_http_parser_refuses_is_logged_in_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, sqlite_template: Path, fake: FeishuFake
) -> None:
    """aiohttp answers these 400 itself and logged each with the parser's traceback at ERROR
    (a dozen lines a request, for anyone who can reach the port): now one WARNING line."""
    database_url = databases.copy_sqlite(sqlite_template, tmp_path / "maka.db")
    caplog.set_level(logging.WARNING, logger="aiohttp.server")
    refused = [
        b"GET /status\x00 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nX: " + b"a" * 20_000 + b"\r\n\r\n",
    ]
    async with full_app(tmp_path, database_url, fake) as app:
        statuses = [await send_raw(app, raw) for raw in refused]
        await wait_until(
            lambda: _server_records(caplog, len(refused)), what="aiohttp's log of the two"
        )
    records = [r for r in caplog.records if r.name == "aiohttp.server"]
    assert statuses == [400, 400]
    assert len(records) == 2, [r.getMessage() for r in records]
    for record in records:
        assert record.levelno == logging.WARNING and record.exc_info is None
        assert "\n" not in record.getMessage() and "answered 400" in record.getMessage()


async def _server_records(caplog: pytest.LogCaptureFixture, count: int) -> bool:
    return sum(r.name == "aiohttp.server" for r in caplog.records) >= count
