"""Copies of the database as files, and back.

SQLite: the online backup API, one step, so the copy is one consistent snapshot taken while the
service keeps writing (WAL: readers never block its writer); the copy is a plain SQLite file in
rollback-journal mode, whole in itself. PostgreSQL: `pg_dump -Fc` and back through `pg_restore`
piped into one `psql` transaction that first drops what the target held and commits only once
the whole backup is in, so a restore that fails, even midway, leaves the target as it was.

A backup file says what it is: its first bytes tell the kind (SQLite's and pg_dump's own
magic), and its schema revision is read from its `alembic_version` table, so no wrapper or
manifest can drift from the data it describes.

Every failure is a `BackupError` whose message is one line."""

from __future__ import annotations

import glob
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from sqlalchemy.engine import make_url

SQLITE_MAGIC = b"SQLite format 3\x00"
PG_DUMP_MAGIC = b"PGDMP"
# Where Debian and Ubuntu put the client programs of each PostgreSQL version, newest wins.
PG_BIN_GLOB = "/usr/lib/postgresql/*/bin"
INSTALL_HINT = (
    "install the PostgreSQL client programs (Debian/Ubuntu: apt-get install postgresql-client)"
)

Kind = Literal["sqlite", "postgresql"]


class BackupError(Exception):
    """Its message is one line fit to print."""


@dataclass(frozen=True)
class BackupInfo:
    kind: Kind
    revision: str | None  # None: no maka schema in it


def backup_kind(path: Path) -> Kind:
    try:
        with path.open("rb") as f:
            head = f.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise BackupError(f"cannot read {path}: {exc.strerror or exc}") from None
    if head.startswith(SQLITE_MAGIC):
        return "sqlite"
    if head.startswith(PG_DUMP_MAGIC):
        return "postgresql"
    raise BackupError(f"{path} is not a maka backup (neither a SQLite file nor a pg_dump -Fc file)")


def read_backup(path: Path) -> BackupInfo:
    kind = backup_kind(path)
    if kind == "sqlite":
        return BackupInfo(kind, _sqlite_revision(path))
    return BackupInfo(kind, _pg_dump_revision(path))


# SQLite


def backup_sqlite(source: Path, target: Path) -> None:
    """Write a snapshot of the live database `source` to `target` (replaced only once whole)."""
    if not source.exists():
        raise BackupError(f"no database at {source}")
    partial = _partial_path(target)
    try:
        src = sqlite3.connect(source)
        try:
            dst = sqlite3.connect(partial)
            try:
                src.backup(dst)  # pages=-1: one step, one read transaction, one snapshot
                dst.execute("PRAGMA journal_mode=DELETE")  # one file, no -wal beside it
            finally:
                dst.close()
        finally:
            src.close()
        os.replace(partial, target)
    except (sqlite3.Error, OSError) as exc:
        partial.unlink(missing_ok=True)
        raise BackupError(f"backup to {target} failed: {exc}") from None


def restore_sqlite(backup: Path, target: Path) -> None:
    """Replace the content of `target` by the backup's, through SQLite itself (its -wal and
    -shm files stay consistent with the main file)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        src = sqlite3.connect(_read_only(backup), uri=True)
        try:
            dst = sqlite3.connect(target)
            try:
                src.backup(dst)
            finally:
                dst.close()
        finally:
            src.close()
    except sqlite3.Error as exc:
        raise BackupError(f"restore into {target} failed: {exc}") from None


def _sqlite_revision(path: Path) -> str | None:
    try:
        conn = sqlite3.connect(_read_only(path), uri=True)
        try:
            row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
        finally:
            conn.close()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return None
        raise BackupError(f"cannot read {path}: {exc}") from None
    except sqlite3.DatabaseError as exc:
        raise BackupError(f"cannot read {path}: {exc}") from None
    return str(row[0]) if row else None


def _read_only(path: Path) -> str:
    """A URI, so the file is opened read-only and never created (a name with ? or # is quoted)."""
    return f"{path.resolve().as_uri()}?mode=ro"


def _partial_path(target: Path) -> Path:
    return target.with_name(f".{target.name}.partial")


# PostgreSQL


def find_pg_tool(name: str) -> str:
    """`name` on PATH, else in the newest /usr/lib/postgresql/*/bin; else one line on what to
    install."""
    found = shutil.which(name)
    if found:
        return found
    for folder in sorted(glob.glob(PG_BIN_GLOB), key=_version_key, reverse=True):
        candidate = Path(folder) / name
        if os.access(candidate, os.X_OK):
            return str(candidate)
    raise BackupError(f"{name} not found on PATH or in {PG_BIN_GLOB}: {INSTALL_HINT}")


def _version_key(folder: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", folder))


def libpq_env(url: str) -> dict[str, str]:
    """The connection as libpq's environment: no password on a command line (`ps` shows those)."""
    u = make_url(url)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    pairs = {
        "PGHOST": u.host,
        "PGPORT": str(u.port) if u.port else None,
        "PGUSER": u.username,
        "PGPASSWORD": u.password,
        "PGDATABASE": u.database,
        "PGSSLMODE": u.query.get("sslmode") or u.query.get("ssl"),
    }
    env.update({k: str(v) for k, v in pairs.items() if v})
    return env


def backup_postgres(url: str, target: Path) -> None:
    pg_dump = find_pg_tool("pg_dump")
    partial = _partial_path(target)
    try:
        _run([pg_dump, "--format=custom", f"--file={partial}"], libpq_env(url), "pg_dump")
        os.replace(partial, target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def restore_postgres(url: str, backup: Path, drop_tables: list[str]) -> None:
    """Drop `drop_tables` (the target's, some perhaps of a newer schema than the backup's), then
    every object the backup holds (--clean), and load it, in ONE transaction that is committed
    only once pg_restore has written the whole script: on any error, psql's or pg_restore's
    midway (a file cut short), the target keeps what it had. (`psql -1` would not do: at the
    end of its input it commits, and a pg_restore that died midway ends that input.)"""
    pg_restore, psql = find_pg_tool("pg_restore"), find_pg_tool("psql")
    env = libpq_env(url) | {"PGOPTIONS": "-c client_min_messages=warning"}
    drop = "".join(f'DROP TABLE IF EXISTS "{t}" CASCADE;\n' for t in drop_tables)
    # Their messages go to files: a pipe nobody reads while the script streams could fill up
    # and stall the child.
    with tempfile.TemporaryFile() as restore_err, tempfile.TemporaryFile() as load_err:
        loader = subprocess.Popen(
            [psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", "-"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=load_err,
        )
        assert loader.stdin is not None
        try:
            script = subprocess.Popen(
                [pg_restore, "--clean", "--if-exists", "--no-owner", "--no-privileges",
                 "--file=-", str(backup)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=restore_err,
            )  # fmt: skip
        except OSError as exc:
            loader.stdin.close()  # nothing sent: psql ends, nothing changed
            loader.wait()
            raise BackupError(f"pg_restore could not run: {exc}") from None
        assert script.stdout is not None
        try:
            loader.stdin.write(f"BEGIN;\n{drop}".encode())
            shutil.copyfileobj(script.stdout, loader.stdin)
            if script.wait() == 0:
                loader.stdin.write(b"\nCOMMIT;\n")
            loader.stdin.close()  # without COMMIT, psql ends and the server rolls back
        except BrokenPipeError:
            pass  # psql stopped at an error (ON_ERROR_STOP): its message says which
        finally:
            script.stdout.close()  # a pg_restore still writing ends on the closed pipe
            script.wait()
            _close_quietly(loader.stdin)
            loader.wait()
        if loader.returncode != 0:
            raise BackupError(f"psql failed, target unchanged: {_first_line(_read(load_err))}")
        if script.returncode != 0:
            raise BackupError(
                f"pg_restore failed, target unchanged: {_first_line(_read(restore_err))}"
            )


def _close_quietly(pipe: IO[bytes]) -> None:
    try:
        pipe.close()
    except BrokenPipeError:  # closing flushes; psql may be gone already
        pass


def _read(file: IO[bytes]) -> bytes:
    file.seek(0)
    return file.read()


def _pg_dump_revision(path: Path) -> str | None:
    pg_restore = find_pg_tool("pg_restore")
    try:
        out = _run(
            [pg_restore, "--data-only", "--table=alembic_version", "--file=-", str(path)],
            dict(os.environ),
            "pg_restore",
        )
    except BackupError as exc:  # a file cut short or damaged: name it, as for SQLite
        raise BackupError(f"cannot read {path}: {exc}") from None
    # The data comes as `COPY public.alembic_version (version_num) FROM stdin;`, its rows,
    # then `\.`.
    lines = out.decode().splitlines()
    for i, line in enumerate(lines):
        if line.startswith("COPY ") and "alembic_version" in line:
            row = lines[i + 1] if i + 1 < len(lines) else "\\."
            return None if row == "\\." else row.strip()
    return None


def _run(argv: list[str], env: dict[str, str], name: str) -> bytes:
    try:
        done = subprocess.run(argv, env=env, capture_output=True, check=False)
    except OSError as exc:
        raise BackupError(f"{name} could not run: {exc}") from None
    if done.returncode != 0:
        raise BackupError(f"{name} failed: {_first_line(done.stderr)}")
    return done.stdout


def _first_line(stderr: bytes) -> str:
    lines = [line.strip() for line in stderr.decode(errors="replace").splitlines() if line.strip()]
    # pg tools end with a summary ("errors ignored on restore: 1"): the cause is the first
    # error; notices (a DROP's cascade) are no cause
    errors = [line for line in lines if "ERROR" in line or "error" in line]
    return (errors or lines or ["no message"])[0]
