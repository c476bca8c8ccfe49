"""Real `maka` processes: `maka migrate`, and `maka serve` replicas started, waited for
(`/readyz`), killed with SIGKILL and restarted. Each replica logs to its own file, whose tail
goes into every failure message about it."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import aiohttp

from tests.faults.postgres import free_port

MAKA = Path(sys.executable).with_name("maka")
READY_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0


def base_env(settings: dict[str, str]) -> dict[str, str]:
    """This environment without any MAKA_* of the caller's, plus `settings`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKA_")}
    env.update(settings)
    return env


async def migrate(settings: dict[str, str], log: Path) -> None:
    with log.open("ab") as out:
        proc = await asyncio.create_subprocess_exec(
            str(MAKA), "migrate", env=base_env(settings), stdout=out, stderr=subprocess.STDOUT
        )
        try:
            async with asyncio.timeout(READY_TIMEOUT):
                code = await proc.wait()
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise AssertionError(f"`maka migrate` took over {READY_TIMEOUT:.0f}s") from None
    if code != 0:
        raise AssertionError(f"`maka migrate` failed ({code}):\n{tail(log)}")


NOISE = ("HTTP Request:",)  # one line per HTTP call: the story is in the rest


def tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return f"(no log at {path})"
    kept = [line for line in text.splitlines() if not any(n in line for n in NOISE)]
    return f"({path})\n" + "\n".join(kept[-lines:])


def serves_webhook(role: str) -> bool:
    """Whether a `maka serve --role` takes Feishu's events (a `worker` runs no webhook)."""
    return role != "worker"


class MakaProcess:
    """One `maka serve` replica. `start()` waits for `/readyz`; `kill()` is SIGKILL."""

    def __init__(
        self, name: str, settings: dict[str, str], workdir: Path, role: str = "all"
    ) -> None:
        self.name = name
        self.role = role  # `maka serve --role`: all, web (no workers) or worker (no webhook)
        self.port = free_port()
        self.workdir = workdir
        self.log = workdir / f"{name}.log"
        self.settings = {
            **settings,
            "MAKA_DATA_DIR": str(workdir / f"{name}-data"),
            "MAKA_HTTP_HOST": "127.0.0.1",
            "MAKA_HTTP_PORT": str(self.port),
        }
        self.proc: asyncio.subprocess.Process | None = None
        self.pids: list[int] = []  # every pid this replica has had, oldest first
        self.killed_at: float | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def has_webhook(self) -> bool:
        return serves_webhook(self.role)

    @property
    def webhook(self) -> str:
        return f"{self.url}/feishu/events"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    def owns(self, instance_id: str | None) -> bool:
        """Whether a lease or claim owner (`host-pid-hex`) is this replica's current pid."""
        if not instance_id or self.pid is None:
            return False
        parts = instance_id.rsplit("-", 2)
        return len(parts) == 3 and parts[1] == str(self.pid)

    async def start(self) -> None:
        assert not self.alive, f"{self.name} is already running"
        with self.log.open("ab") as out:
            out.write(f"\n==== {self.name}: maka serve at {time.strftime('%X')} ====\n".encode())
            out.flush()
            self.proc = await asyncio.create_subprocess_exec(
                str(MAKA),
                "serve",
                "--role",
                self.role,
                env=base_env(self.settings),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # our signals are our own
            )
        self.pids.append(self.proc.pid)
        await self.wait_ready()

    async def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        last = "no answer yet"
        deadline = time.monotonic() + timeout
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as http:
            while time.monotonic() < deadline:
                if not self.alive:
                    raise AssertionError(
                        f"{self.name} exited ({self.proc.returncode if self.proc else None}) "
                        f"before it was ready:\n{tail(self.log)}"
                    )
                try:
                    async with http.get(f"{self.url}/readyz") as resp:
                        if resp.status == 200:
                            return
                        last = f"HTTP {resp.status}: {await resp.text()}"
                except (aiohttp.ClientError, TimeoutError) as exc:
                    last = f"{type(exc).__name__}: {exc}"
                await asyncio.sleep(0.2)
        raise AssertionError(
            f"{self.name} not ready within {timeout:.0f}s (last /readyz: {last}):\n{tail(self.log)}"
        )

    async def kill(self) -> None:
        """SIGKILL: no drain, no claims given back, leases left to expire."""
        assert self.proc is not None and self.alive, f"{self.name} is not running"
        self.proc.send_signal(signal.SIGKILL)
        self.killed_at = time.monotonic()
        await self.proc.wait()

    async def stop(self) -> None:
        """SIGTERM and the drain; SIGKILL if it takes longer than STOP_TIMEOUT."""
        if self.proc is None or not self.alive:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            async with asyncio.timeout(STOP_TIMEOUT):
                await self.proc.wait()
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()

    def log_tail(self, lines: int = 40) -> str:
        return f"---- {self.name} log ----\n{tail(self.log, lines)}"
