"""Footprint benchmark, run by hand: `.venv/bin/python benchmarks/footprint.py` (`make bench`
runs it). Starts real `maka serve` processes, one after the other, each in a fresh temp data
dir on the embedded defaults (SQLite, tantivy, no model):

* `embedded`: no Feishu app;
* `feishu webhook`: a Feishu app in webhook mode (app id and secret, a verification token);
* `feishu ws`: the same app over the long connection (`MAKA_FEISHU_MODE=ws`).

The Feishu ones talk to the loopback Feishu fake (tests/fakes), served from this process: the
tenant token, the bot info and, for `ws`, the long connection. Each process is measured once
`/readyz` answers 200 (for Feishu that means the bot's open_id is known and, for `ws`, the
long connection is up) and it has then idled for `--idle` seconds: its resident memory (VmRSS
from /proc, plus that of any child processes), printed beside a bare
`python -c 'import time; time.sleep(…)'` started the same way, as a ratio. The first history
sync is due 30 s after a first start (bot/sync/component.py `FIRST_SYNC_DELAY`): with
`--idle 40` the Feishu processes have run it against the fake (no history) before they are
measured. No message is handled, so the numbers are those of a process at rest.

For comparison (measured by hand, not here): before the Feishu SDK was kept off the embedded
path the embedded process held about 325 MB; the Hermes Agent gateway idles at about 235 MB.
The target (issue 16) is at most 200 MB for each; this script only reports, it does not fail
on a number. Exits 1 only when a service does not start.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # for tests.fakes

from _summary import emit  # noqa: E402

from tests.fakes import FeishuFake  # noqa: E402

MAKA = Path(sys.executable).with_name("maka")
READY_TIMEOUT = 90.0
VERIFICATION_TOKEN = "footprint-verification-token"


@dataclass
class Measured:
    name: str
    rss_kb: int
    ready_after: float | None = None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_kb(pid: int) -> int:
    """VmRSS of `pid` and of its descendants (the service starts none today)."""
    total = 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
        for task in Path(f"/proc/{pid}/task").iterdir():
            for child in (task / "children").read_text().split():
                total += rss_kb(int(child))
    except (OSError, ValueError):
        pass
    return total


def ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def embedded_env(data: str, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKA_")}
    # The embedded defaults, whatever this shell has set.
    env.update(MAKA_DATA_DIR=data, MAKA_HTTP_PORT=str(port))
    return env


async def measure_serve(
    name: str, idle: float, extra_env: Callable[[], dict[str, str]]
) -> Measured | str:
    with tempfile.TemporaryDirectory() as data, tempfile.TemporaryFile() as log:
        port = free_port()
        env = {**embedded_env(data, port), **extra_env()}
        proc = await asyncio.create_subprocess_exec(
            str(MAKA), "serve", env=env, stdout=subprocess.DEVNULL, stderr=log
        )
        try:
            started = time.monotonic()
            while not await asyncio.to_thread(ready, port):
                if proc.returncode is not None or time.monotonic() - started > READY_TIMEOUT:
                    log.seek(0)
                    return f"{name}: maka serve did not become ready: {log.read()[-2000:]!r}"
                await asyncio.sleep(0.2)
            ready_after = time.monotonic() - started
            await asyncio.sleep(idle)
            if proc.returncode is not None:
                return f"{name}: maka serve exited while idle (code {proc.returncode})"
            return Measured(name, rss_kb(proc.pid), ready_after)
        finally:
            if proc.returncode is None:
                proc.terminate()
            await asyncio.wait_for(proc.wait(), 30)


async def measure_bare(idle: float) -> Measured:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", f"import time; time.sleep({idle + 60:.0f})",
        env={k: v for k, v in os.environ.items() if not k.startswith("MAKA_")},
    )  # fmt: skip
    try:
        await asyncio.sleep(idle)
        return Measured(f"bare `{Path(sys.executable).name} -c 'import time; time.sleep(…)'`",
                        rss_kb(proc.pid))  # fmt: skip
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 30)


async def run(idle: float, only: set[str] | None) -> int:
    async with FeishuFake(bot_open_id="ou_bot", bot_name="Maka") as fake:

        def feishu(mode: str) -> Callable[[], dict[str, str]]:
            def env() -> dict[str, str]:
                app_id, secret = fake.new_app()  # a fresh app: the SDK caches tokens per app
                return {
                    "MAKA_FEISHU_APP_ID": app_id,
                    "MAKA_FEISHU_APP_SECRET": secret,
                    "MAKA_FEISHU_VERIFICATION_TOKEN": VERIFICATION_TOKEN,
                    "MAKA_FEISHU_DOMAIN": fake.url,
                    "MAKA_FEISHU_MODE": mode,
                }

            return env

        cases: list[tuple[str, Callable[[], Awaitable[Measured | str]]]] = [
            ("embedded", lambda: measure_serve("embedded", idle, dict)),
            ("webhook", lambda: measure_serve("feishu webhook", idle, feishu("webhook"))),
            ("ws", lambda: measure_serve("feishu ws", idle, feishu("ws"))),
        ]
        bare = await measure_bare(idle)
        rows: list[Measured] = []
        failed = False
        for key, case in cases:
            if only and key not in only:
                continue
            result = await case()
            if isinstance(result, str):
                print(result, file=sys.stderr)
                failed = True
            else:
                rows.append(result)
    print(f"| process (idle {idle:.0f} s after ready) | ready after | idle RSS | × bare |")
    print("|---|---|---|---|")
    for row in [bare, *rows]:
        ready_after = "" if row.ready_after is None else f"{row.ready_after:.1f} s"
        ratio = row.rss_kb / bare.rss_kb if bare.rss_kb else float("nan")
        label = row.name if row is bare else f"`maka serve`, {row.name}"
        print(f"| {label} | {ready_after} | {row.rss_kb / 1024:.0f} MB | {ratio:.1f} |")
    for row in rows:
        mb, bare_mb = round(row.rss_kb / 1024), round(bare.rss_kb / 1024)
        emit("footprint", f"idle RSS, {row.name}", mb, bare_mb, unit="MB", better="lower",
             baseline_what="bare python sleep")  # fmt: skip
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--idle", type=float, default=5.0, help="seconds idle before measuring")
    parser.add_argument("--quick", action="store_true", help="idle 1 s")
    parser.add_argument(
        "--only", action="append", choices=["embedded", "webhook", "ws"], help="repeatable"
    )
    args = parser.parse_args()
    idle = 1.0 if args.quick else args.idle
    return asyncio.run(run(idle, set(args.only) if args.only else None))


if __name__ == "__main__":
    sys.exit(main())
