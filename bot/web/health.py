"""Liveness, readiness and Prometheus metrics.

`/healthz` answers while the process runs. `/readyz` answers 200 only when every readiness
check passes (the database answers, the Host's workers run, a channel's connection is up),
so Kubernetes stops routing to a replica that cannot do its job.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

ReadinessCheck = Callable[[], Awaitable[str | None]]  # None when ready, else the reason
CHECKS_KEY = web.AppKey("readiness_checks", dict[str, ReadinessCheck])
CHECK_TIMEOUT = 3.0


@dataclass(frozen=True)
class CheckResult:
    name: str
    problem: str | None


async def run_checks(checks: dict[str, ReadinessCheck]) -> list[CheckResult]:
    async def one(name: str, check: ReadinessCheck) -> CheckResult:
        try:
            async with asyncio.timeout(CHECK_TIMEOUT):
                return CheckResult(name, await check())
        except TimeoutError:
            return CheckResult(name, f"no answer within {CHECK_TIMEOUT:.0f}s")
        except Exception as exc:
            return CheckResult(name, f"{type(exc).__name__}: {exc}")

    return list(await asyncio.gather(*(one(n, c) for n, c in checks.items())))


async def healthz(_request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def readyz(request: web.Request) -> web.Response:
    results = await run_checks(request.app[CHECKS_KEY])
    ready = all(r.problem is None for r in results)
    body = {
        "status": "ready" if ready else "not ready",
        "checks": {r.name: r.problem or "ok" for r in results},
    }
    return web.json_response(body, status=200 if ready else 503)


async def metrics(_request: web.Request) -> web.Response:
    resp = web.Response(body=generate_latest(REGISTRY))
    resp.content_type = CONTENT_TYPE_LATEST.split(";")[0]
    resp.charset = "utf-8"
    return resp


def add_health_routes(app: web.Application, checks: dict[str, ReadinessCheck]) -> None:
    app[CHECKS_KEY] = checks
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
