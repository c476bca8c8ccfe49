"""Growth figures for a fresh server (benchmarks/growth.py's MORE): a real `maka serve`
process (role all: webhook and every worker) started on the filled database and data
directory, timed from spawn to its `/readyz` answering 200, and its resident memory (VmRSS
of its /proc status) once ready and a second later. Then it is stopped (SIGTERM).

The server shares the data directory (and so the search index) with the bench's in-process
app, which by then has indexed the history (`_growth_search`, registered before this
module): the server's followers start at their checkpoints with nothing to index. The time
includes Python starting and importing the bot, which is most of it; RSS is the server's main
process only. The median of STARTS starts is reported.
"""

from __future__ import annotations

import asyncio
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp

from bot.config import Settings, reveal
from tests.faults.postgres import free_port

MAKA = Path(sys.executable).with_name("maka")
STARTS = 3
READY_TIMEOUT = 120.0
STOP_TIMEOUT = 30.0
POLL = 0.02
SETTLE = 1.0  # the workers' first passes, after which the RSS is read again


async def figures(app: Any, messages: int) -> dict[str, float]:
    settings: Settings = app.services.settings
    runs = [await _start_once(settings, app.url) for _ in range(STARTS)]
    return {
        "fresh server start-up ms": statistics.median(r[0] for r in runs),
        "fresh server RSS MB when ready": statistics.median(r[1] for r in runs),
        "fresh server RSS MB 1s later": statistics.median(r[2] for r in runs),
    }


def _env(settings: Settings, port: int) -> dict[str, str]:
    """This environment without the caller's MAKA_*, plus the bench app's settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKA_")}
    values = {
        "MAKA_DATABASE_URL": settings.resolved_database_url,
        "MAKA_DATA_DIR": str(settings.data_dir),
        "MAKA_HTTP_HOST": "127.0.0.1",
        "MAKA_HTTP_PORT": str(port),
        "MAKA_FEISHU_APP_ID": settings.feishu_app_id,
        "MAKA_FEISHU_APP_SECRET": reveal(settings.feishu_app_secret),
        "MAKA_FEISHU_ENCRYPT_KEY": reveal(settings.feishu_encrypt_key),
        "MAKA_FEISHU_VERIFICATION_TOKEN": reveal(settings.feishu_verification_token),
        "MAKA_FEISHU_MODE": str(settings.feishu_mode),
        "MAKA_FEISHU_DOMAIN": settings.feishu_domain,
    }
    env.update({k: v for k, v in values.items() if v})
    return env


async def _start_once(settings: Settings, _bench_url: str) -> tuple[float, float, float]:
    port = free_port()
    log = Path(settings.data_dir) / f"serve-{port}.log"
    with log.open("wb") as out:
        started = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(
            str(MAKA),
            "serve",
            "--role",
            "all",
            env=_env(settings, port),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        await _wait_ready(proc, f"http://127.0.0.1:{port}/readyz", log)
        ready_ms = (time.perf_counter() - started) * 1000
        rss_ready = _rss_mb(proc.pid)
        await asyncio.sleep(SETTLE)
        return ready_ms, rss_ready, _rss_mb(proc.pid)
    finally:
        await _stop(proc)


async def _wait_ready(proc: asyncio.subprocess.Process, url: str, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    last = "no answer yet"
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as http:
        while time.monotonic() < deadline:
            if proc.returncode is not None:
                # The log lives in the run's temporary folder: say its end here.
                tail = (await asyncio.to_thread(log.read_text, errors="replace"))[-1500:]
                raise RuntimeError(f"maka serve exited ({proc.returncode}):\n{tail}")
            try:
                async with http.get(url) as resp:
                    if resp.status == 200:
                        return
                    last = f"HTTP {resp.status}"
            except (aiohttp.ClientError, TimeoutError) as exc:
                last = type(exc).__name__
            await asyncio.sleep(POLL)
    raise RuntimeError(f"maka serve not ready in {READY_TIMEOUT:.0f}s ({last}); see {log}")


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1000  # kB
    raise RuntimeError(f"no VmRSS for pid {pid}")


async def _stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        async with asyncio.timeout(STOP_TIMEOUT):
            await proc.wait()
    except TimeoutError:
        proc.kill()
        await proc.wait()
