"""A private PostgreSQL cluster for one fault test: its own data directory and port on
127.0.0.1, trust auth, started and stopped (and restarted under traffic) by the test. The
system's PostgreSQL is never touched.

PostgreSQL refuses to run as root: under root the cluster runs as the `postgres` user (or
`nobody`), in a directory under the system temp dir that user can reach.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

BIN_DIRS = ("/usr/lib/postgresql/*/bin", "/usr/local/pgsql/bin", "/usr/local/bin", "/usr/bin")
SUPERUSER = "postgres"
DATABASE = "maka"
START_TIMEOUT = 60.0


class PostgresMissing(Exception):
    """No PostgreSQL server binaries here (or no user to run them as)."""


def find_bin_dir() -> Path:
    """The newest directory holding `initdb`, `pg_ctl` and `postgres`."""
    candidates: list[Path] = []
    for pattern in BIN_DIRS:
        if "*" in pattern:
            root, _, rest = pattern.partition("*")
            found = sorted(Path(root).glob("*" + rest), key=_version_key, reverse=True)
            candidates.extend(found)
        else:
            candidates.append(Path(pattern))
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    for directory in candidates:
        if all((directory / tool).is_file() for tool in ("initdb", "pg_ctl", "postgres")):
            return directory
    raise PostgresMissing(
        "no PostgreSQL server binaries (initdb, pg_ctl, postgres) found in "
        + ", ".join(BIN_DIRS)
        + " or on PATH; install PostgreSQL (e.g. apt-get install postgresql) to run the fault suite"
    )


def _version_key(path: Path) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in path.parent.name.split("."))
    except ValueError:
        return (0,)


def _run_as() -> str | None:
    """The user to run PostgreSQL as: None (ourselves) unless we are root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    raise PostgresMissing("running as root and there is no `postgres` or `nobody` user")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PrivateCluster:
    """`async with PrivateCluster() as pg:` then use `pg.url`; `await pg.stop()`,
    `await pg.start()`, `await pg.restart()` under traffic."""

    def __init__(self) -> None:
        self.bin_dir = find_bin_dir()
        self.user = _run_as()
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="maka-faults-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "postgres.log"
        self.running = False

    @property
    def url(self) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{DATABASE}"

    @property
    def admin_url(self) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres"

    async def __aenter__(self) -> PrivateCluster:
        try:
            await self.create()
            await self.start()
            await self._create_database()
        except BaseException:
            await self.destroy()
            raise
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.destroy()

    async def create(self) -> None:
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        await self._tool(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            SUPERUSER,
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )
        settings = {
            "listen_addresses": "'127.0.0.1'",
            "port": str(self.port),
            "unix_socket_directories": f"'{self.root}'",
            "max_connections": "200",
            "shared_buffers": "32MB",
            "fsync": "off",  # an OS crash is not one of our faults; a process crash is
            "full_page_writes": "off",
            "log_min_messages": "warning",
        }
        with (self.data / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.write("\n# the fault suite's private cluster\n")
            conf.writelines(f"{key} = {value}\n" for key, value in settings.items())

    async def start(self) -> None:
        await self._tool(
            "pg_ctl",
            "start",
            "-w",
            "-t",
            str(int(START_TIMEOUT)),
            "-D",
            str(self.data),
            "-l",
            str(self.log),
        )
        self.running = True

    async def stop(self, mode: str = "fast") -> None:
        """`fast`: clients are disconnected, the shutdown is clean; `immediate`: like a crash."""
        await self._tool("pg_ctl", "stop", "-w", "-m", mode, "-D", str(self.data))
        self.running = False

    async def restart(self) -> None:
        await self._tool(
            "pg_ctl",
            "restart",
            "-w",
            "-m",
            "fast",
            "-t",
            str(int(START_TIMEOUT)),
            "-D",
            str(self.data),
            "-l",
            str(self.log),
        )
        self.running = True

    async def destroy(self) -> None:
        if self.running:
            try:
                await self.stop("immediate")
            except Exception:  # the directory goes anyway; the postmaster dies with it
                pass
        shutil.rmtree(self.root, ignore_errors=True)

    async def _create_database(self) -> None:
        import asyncpg

        conn = await asyncpg.connect(self.admin_url)
        try:
            await conn.execute(f'CREATE DATABASE "{DATABASE}"')
        finally:
            await conn.close()

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no PostgreSQL log)"
        return "\n".join(text.splitlines()[-lines:])

    async def _tool(self, tool: str, *args: str) -> None:
        proc = await asyncio.create_subprocess_exec(
            str(self.bin_dir / tool),
            *args,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            user=self.user,
            cwd=self.root,
        )
        try:
            async with asyncio.timeout(START_TIMEOUT + 30):
                out, _ = await proc.communicate()
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise AssertionError(
                f"{tool} {' '.join(args)} took over {START_TIMEOUT + 30:.0f}s\n{self.log_tail()}"
            ) from None
        if proc.returncode != 0:
            raise AssertionError(
                f"{tool} {' '.join(args)} failed ({proc.returncode}):\n"
                f"{out.decode(errors='replace')}\n{self.log_tail()}"
            )
