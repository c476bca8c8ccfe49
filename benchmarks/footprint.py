"""Footprint benchmark, run by hand: `.venv/bin/python benchmarks/footprint.py` (`make bench`
runs it). Starts one real `maka serve` on the embedded defaults (SQLite, tantivy, no Feishu
app, no model) in a fresh temp dir, waits for `/readyz`, lets it idle for `--idle` seconds and
prints its resident memory (VmRSS from /proc) and that of its children, if any.

For comparison (measured by hand, not here): before the Feishu SDK was kept off the embedded
path the same process held about 325 MB; the Hermes Agent gateway idles at about 235 MB.
No target: the number is for comparing runs. Exits 1 only when the service does not start.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

MAKA = Path(sys.executable).with_name("maka")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--idle", type=float, default=5.0, help="seconds idle before measuring")
    parser.add_argument("--quick", action="store_true", help="idle 1 s")
    args = parser.parse_args()
    idle = 1.0 if args.quick else args.idle
    with tempfile.TemporaryDirectory() as data:
        port = free_port()
        env = {**os.environ, "MAKA_DATA_DIR": data, "MAKA_HTTP_PORT": str(port)}
        for key in [
            k for k in env if k.startswith("MAKA_") and k not in ("MAKA_DATA_DIR", "MAKA_HTTP_PORT")
        ]:
            del env[key]  # the embedded defaults, whatever this shell has set
        proc = subprocess.Popen([str(MAKA), "serve"], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)  # fmt: skip
        try:
            started = time.monotonic()
            while not ready(port):
                if proc.poll() is not None or time.monotonic() - started > 60:
                    err = proc.stderr.read().decode() if proc.stderr else ""
                    print(f"maka serve did not become ready: {err[-2000:]}", file=sys.stderr)
                    return 1
                time.sleep(0.2)
            ready_after = time.monotonic() - started
            time.sleep(idle)
            rss = rss_kb(proc.pid)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print("| measure | value |\n|---|---|")
    print(f"| ready after | {ready_after:.1f} s |")
    print(f"| idle RSS after {idle:.0f} s | {rss / 1024:.0f} MB |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
