"""Admin logins hold up: wrong tokens are limited per client and overall (429 with
Retry-After, through every door: the console's login, the status page's form, a bearer
token), the client is the peer or what a trusted proxy says, never what any peer claims, and
behind a TLS-terminating proxy (MAKA_PUBLIC_URL, or X-Forwarded-* from MAKA_TRUSTED_PROXIES)
the pages log in and the cookie is Secure. Over a real loopback server; the limits' clock is
the test's, so nothing here waits for time to pass."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.config import ConfigError, load_settings
from bot.web.guard import COOKIE
from bot.web.login_limits import LOGIN_LIMITS, LoginLimits
from tests.apps import RunningApp, make_settings, running_app
from tests.echo_responder import EchoComponent

TOKEN = "open-sesame-4711"
ATTACKER, OWNER = "203.0.113.5", "198.51.100.7"
PROXIED = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "bot.example.com"}
PUBLIC_ORIGIN = {"Origin": "https://bot.example.com"}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def frozen(app: RunningApp) -> Clock:
    clock = Clock()
    app.app[LOGIN_LIMITS].clock = clock
    return clock


async def console_login(
    app: RunningApp, token: str, headers: dict[str, str] | None = None
) -> tuple[int, Any, Any]:
    async with app.http.post(
        f"{app.url}/console/api/login", json={"token": token}, headers=headers or {}
    ) as resp:
        return resp.status, resp.headers.get("Retry-After"), resp.cookies.get(COOKIE)


def test_a_client_past_its_limit_waits_until_its_oldest_wrong_try_is_a_window_old() -> None:
    clock = Clock()
    limits = LoginLimits(per_client=5, overall=30, window=60.0, clock=clock)
    for _ in range(5):
        assert limits.wait("a") is None
        limits.failed("a")
        clock.now += 1
    assert limits.wait("a") == pytest.approx(55.0)
    assert limits.wait("b") is None  # another client is not held back by it
    clock.now += 55.0
    assert limits.wait("a") is None  # the oldest wrong try is a window old
    limits.failed("b")
    limits.succeeded("b")  # the right token forgets a client's wrong ones
    assert limits.wait("b") is None


def test_past_the_overall_limit_every_client_waits() -> None:
    clock = Clock()
    limits = LoginLimits(per_client=5, overall=30, window=60.0, clock=clock)
    for n in range(30):  # a crowd of addresses, each below its own limit
        limits.failed(f"10.0.{n}.1")
    assert limits.wait("10.9.9.9") == pytest.approx(60.0)
    clock.now += 60.0
    assert limits.wait("10.9.9.9") is None


async def test_fifty_wrong_tokens_from_one_client_are_refused_after_five_and_another_logs_in(
    tmp_path: Path, database_url: str
) -> None:
    settings = make_settings(tmp_path, database_url, admin_token=TOKEN, trusted_proxies="127.0.0.1")
    async with running_app(settings, bot=EchoComponent()) as app:
        clock = frozen(app)
        attacker = {"X-Forwarded-For": ATTACKER}
        answers = [(await console_login(app, f"guess-{n}", attacker))[:2] for n in range(50)]
        assert answers[:5] == [(401, None)] * 5
        assert answers[5:] == [(429, "60")] * 45
        # The right token from the refused client is refused too: else the limit would
        # tell a right guess from a wrong one.
        assert (await console_login(app, TOKEN, attacker))[0] == 429
        # Every door shares the limit: the status page's form and a bearer token.
        async with app.http.post(
            f"{app.url}/status/login", data={"token": "guess"}, headers=attacker
        ) as resp:
            assert resp.status == 429 and resp.headers["Retry-After"] == "60"
            assert "Too many wrong tokens" in await resp.text()
        bearer = {**attacker, "Authorization": "Bearer guess"}
        async with app.http.get(f"{app.url}/status.json", headers=bearer) as resp:
            assert resp.status == 429
        # Another client logs in, with the token compared as ever.
        status, _, cookie = await console_login(app, TOKEN, {"X-Forwarded-For": OWNER})
        assert status == 200 and cookie is not None
        clock.now += 60.0
        assert (await console_login(app, TOKEN, attacker))[0] == 200  # a window later


async def test_x_forwarded_for_from_a_peer_that_is_no_trusted_proxy_does_not_dodge_the_limit(
    tmp_path: Path, database_url: str
) -> None:
    settings = make_settings(tmp_path, database_url, admin_token=TOKEN)  # no trusted proxies
    async with running_app(settings, bot=EchoComponent()) as app:
        frozen(app)
        statuses = [
            (await console_login(app, "guess", {"X-Forwarded-For": f"192.0.2.{n}"}))[0]
            for n in range(20)
        ]
        assert statuses == [401] * 5 + [429] * 15


async def test_behind_a_trusted_https_proxy_the_login_works_and_its_cookie_is_secure(
    tmp_path: Path, database_url: str
) -> None:
    settings = make_settings(
        tmp_path, database_url, admin_token=TOKEN, trusted_proxies="127.0.0.0/8"
    )
    async with running_app(settings, bot=EchoComponent()) as app:
        browser = {**PROXIED, **PUBLIC_ORIGIN, "X-Forwarded-For": OWNER}
        status, _, cookie = await console_login(app, TOKEN, browser)
        assert status == 200 and cookie is not None
        assert cookie["secure"] is True and cookie["httponly"] is True
        assert cookie["samesite"] == "Strict" and cookie["path"] == "/console"
        logged_in = {**browser, "Cookie": f"{COOKIE}={cookie.value}"}
        async with app.http.post(
            f"{app.url}/console/api/messages", json={"text": "hi"}, headers=logged_in
        ) as resp:
            assert resp.status == 200, await resp.text()
        async with app.http.post(
            f"{app.url}/status/login", data={"token": TOKEN}, headers=browser,
            allow_redirects=False,
        ) as resp:  # fmt: skip
            assert resp.status == 303
            assert resp.cookies[COOKIE]["secure"] is True
        # The proxy passes the browser's Host on: not a DNS-rebinding page on loopback.
        async with app.http.get(
            f"{app.url}/status.json", headers={**logged_in, "Host": "bot.example.com"}
        ) as resp:
            assert resp.status == 200
        # Another site is still another site behind the proxy.
        evil = {**browser, "Origin": "https://evil.example"}
        assert (await console_login(app, TOKEN, evil))[0] == 403


async def test_the_same_headers_from_a_peer_that_is_no_trusted_proxy_are_ignored(
    tmp_path: Path, database_url: str
) -> None:
    settings = make_settings(tmp_path, database_url, admin_token=TOKEN)
    async with running_app(settings, bot=EchoComponent()) as app:
        status, _, _ = await console_login(app, TOKEN, {**PROXIED, **PUBLIC_ORIGIN})
        assert status == 403  # its origin is what it reached: http://127.0.0.1:port
        status, _, cookie = await console_login(app, TOKEN, PROXIED)
        assert status == 200 and cookie is not None
        assert not cookie["secure"]  # plain http, whatever X-Forwarded-Proto claims


async def test_with_an_https_public_url_its_origin_is_accepted_and_the_cookie_is_secure(
    tmp_path: Path, database_url: str
) -> None:
    settings = make_settings(
        tmp_path, database_url, admin_token=TOKEN, public_url="https://bot.example.com/"
    )
    async with running_app(settings, bot=EchoComponent()) as app:
        status, _, cookie = await console_login(app, TOKEN, PUBLIC_ORIGIN)
        assert status == 200 and cookie is not None and cookie["secure"] is True
        evil = {"Origin": "https://evil.example"}
        assert (await console_login(app, TOKEN, evil))[0] == 403
        # Directly on loopback (a port-forward) the pages still work.
        direct = {"Origin": app.url}
        assert (await console_login(app, TOKEN, direct))[0] == 200


@pytest.mark.parametrize(
    ("values", "line"),
    [
        (
            {"trusted_proxies": "10.0.0.0/8,proxy.internal"},
            "MAKA_TRUSTED_PROXIES: 'proxy.internal' is not an IP address or network",
        ),
        ({"trusted_proxies": "10.0.0.0/33"}, "MAKA_TRUSTED_PROXIES: '10.0.0.0/33' is not"),
        ({"public_url": "bot.example.com"}, "MAKA_PUBLIC_URL: expected an http:// or https://"),
        ({"public_url": "https://bot.example.com/maka"}, "MAKA_PUBLIC_URL: only scheme, host"),
    ],
)
def test_a_broken_proxy_setting_stops_start_up_in_one_line(
    tmp_path: Path, values: dict[str, str], line: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        load_settings(data_dir=tmp_path, **values)
    [only] = refused.value.lines
    assert only.startswith(line), only


def test_proxy_settings_read_as_written(tmp_path: Path) -> None:
    settings = load_settings(
        data_dir=tmp_path,
        trusted_proxies=" 10.0.0.0/8, ::1 ",
        public_url="HTTPS://Bot.Example.com:443/",
    )
    assert [str(n) for n in settings.trusted_proxies] == ["10.0.0.0/8", "::1/128"]
    assert settings.public_url == "https://bot.example.com"
