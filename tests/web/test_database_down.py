"""While the database is down every page says so with a 503 (an HTML page for a browser, JSON
for the rest), never a 500 and never a wait without end; the status page, the console API and
/readyz answer again by themselves once it is back. PostgreSQL is taken down for real, through
a forwarder the test stops (tests/web/database_outage.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.config import Role
from bot.web import outage
from tests.apps import RunningApp, make_settings, running_app
from tests.echo_responder import EchoComponent
from tests.waiting import wait_until
from tests.web.database_outage import DatabaseSwitch, switchable

pytestmark = pytest.mark.postgres
TOKEN = "open-sesame-4711"
ADMIN = {"Authorization": f"Bearer {TOKEN}"}
BROWSER = {**ADMIN, "Accept": "text/html,application/xhtml+xml"}


@pytest.fixture
async def switch_and_url(postgres_run_database: str) -> AsyncIterator[tuple[DatabaseSwitch, str]]:
    async with switchable(postgres_run_database) as pair:
        yield pair


async def _status(app: RunningApp, method: str, path: str, **kwargs: object) -> tuple[int, str]:
    async with app.http.request(method, f"{app.url}{path}", **kwargs) as resp:  # type: ignore[arg-type]
        return resp.status, await resp.text()


async def test_with_the_database_down_each_page_answers_503_saying_so_and_recovers(
    tmp_path: Path, switch_and_url: tuple[DatabaseSwitch, str]
) -> None:
    switch, url = switch_and_url
    settings = make_settings(tmp_path, url, admin_token=TOKEN)
    async with running_app(settings, bot=EchoComponent()) as app:
        assert (await _status(app, "GET", "/status", headers=BROWSER))[0] == 200
        await switch.stop()

        status, page = await _status(app, "GET", "/status", headers=BROWSER)
        assert status == 503 and "the database is unreachable" in page.lower(), page
        assert "<h1>" in page and "maka doctor" in page
        for method, path, kwargs in (
            ("GET", "/status.json", {"headers": ADMIN}),
            ("GET", "/console/api/messages?chat=dm", {"headers": ADMIN}),
            ("POST", "/console/api/messages", {"headers": ADMIN, "json": {"text": "hello?"}}),
        ):
            status, body = await _status(app, method, path, **kwargs)
            assert status == 503, (path, body)
            assert '"error": "the database is unreachable"' in body, (path, body)
        status, body = await _status(app, "GET", "/readyz")
        assert status == 503 and '"database"' in body
        assert (await _status(app, "GET", "/healthz"))[0] == 200  # alive, only not ready

        await switch.start()  # back, on the same port: the pool's connections are dead
        seen: list[int] = []

        async def answers_again() -> bool:
            seen.append((await _status(app, "GET", "/status", headers=BROWSER))[0])
            return seen[-1] == 200

        await wait_until(answers_again, what="the status page answering once the database is back")
        assert set(seen) <= {503, 200}, seen  # a lost connection is the outage, not a 500
        assert (await _status(app, "GET", "/status.json", headers=ADMIN))[0] == 200
        status, _ = await _status(app, "POST", "/console/api/messages", headers=ADMIN,
                                  json={"text": "back"})  # fmt: skip
        assert status == 200


async def test_a_restart_between_two_requests_is_a_503_at_most_never_a_500(
    tmp_path: Path, switch_and_url: tuple[DatabaseSwitch, str]
) -> None:
    """The pool still holds connections to the server that went away; the first request
    after it is back fails on one of them while a ping (on a new one) succeeds: that is the
    outage too. (The web role: no workers to use up the dead connections first.)"""
    switch, url = switch_and_url
    settings = make_settings(tmp_path, url, admin_token=TOKEN)
    async with running_app(settings, Role.WEB, bot=EchoComponent()) as app:
        assert (await _status(app, "GET", "/status.json", headers=ADMIN))[0] == 200
        await switch.stop()
        await switch.start()
        first, body = await _status(app, "GET", "/status.json", headers=ADMIN)
        assert first in (200, 503), body
        assert (await _status(app, "GET", "/status.json", headers=ADMIN))[0] == 200


async def test_a_database_that_never_answers_is_a_503_within_the_deadline(
    tmp_path: Path, switch_and_url: tuple[DatabaseSwitch, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that accepts connections and never answers: the request is stopped at the
    deadline (here shortened, so the test is quick) and answered 503, not left hanging."""
    monkeypatch.setattr(outage, "REQUEST_DEADLINE", 1.0)
    monkeypatch.setattr(outage, "PING_DEADLINE", 0.5)
    switch, url = switch_and_url
    settings = make_settings(tmp_path, url, admin_token=TOKEN)
    async with running_app(settings, bot=EchoComponent()) as app:
        await switch.hang()
        for path in ("/status.json", "/console/api/messages?chat=dm"):
            status, body = await _status(app, "GET", path, headers=ADMIN)
            assert status == 503, (path, body)
            assert "within" in body, body
        await switch.stop()
        await switch.start()  # so that shutting down finds its database
