from __future__ import annotations

from pathlib import Path

from bot.config import Role
from tests.apps import make_settings, running_app


async def test_health_ready_and_metrics_answer_when_running(
    tmp_path: Path, database_url: str
) -> None:
    async with running_app(make_settings(tmp_path, database_url)) as app:
        async with app.http.get(f"{app.url}/healthz") as resp:
            assert resp.status == 200
        async with app.http.get(f"{app.url}/readyz") as resp:
            body = await resp.json()
            assert resp.status == 200, body
            assert body["checks"] == {"database": "ok", "workers": "ok"}
        async with app.http.get(f"{app.url}/metrics") as resp:
            assert resp.status == 200
            assert "maka_worker_errors_total" in await resp.text()


async def test_readiness_fails_when_the_database_is_unreachable(
    tmp_path: Path, database_url: str
) -> None:
    async with running_app(make_settings(tmp_path, database_url)) as app:
        services = app.services
        original_ping = services.db.ping

        async def broken_ping() -> None:
            raise ConnectionRefusedError("database down")

        services.db.ping = broken_ping  # type: ignore[method-assign]
        try:
            async with app.http.get(f"{app.url}/readyz") as resp:
                body = await resp.json()
            assert resp.status == 503
            assert "database down" in body["checks"]["database"]
            async with app.http.get(f"{app.url}/healthz") as resp:
                assert resp.status == 200  # alive, just not ready
        finally:
            services.db.ping = original_ping  # type: ignore[method-assign]


async def test_web_role_runs_no_workers(tmp_path: Path, database_url: str) -> None:
    async with running_app(make_settings(tmp_path, database_url), Role.WEB) as app:
        assert app.services.host.status() == {}
        async with app.http.get(f"{app.url}/readyz") as resp:
            assert resp.status == 200
