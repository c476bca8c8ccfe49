"""Another process's write lock on a SQLite file, for the tests of what waits it out."""

from __future__ import annotations

import sqlite3
import threading


class OtherProcessWriter:
    """Holds SQLite's write lock from another connection on another thread, as a `maka`
    command in another process would, until told to commit."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.holding = threading.Event()
        self.release = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        conn = sqlite3.connect(self.path, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "INSERT INTO leases (name, owner, expires_at, acquired_at) "
            "VALUES ('other', 'cli', '2030-01-01', '2026-01-01')"
        )
        self.holding.set()
        self.release.wait(30)
        conn.execute("COMMIT")
        conn.close()

    def __enter__(self) -> OtherProcessWriter:
        self._thread.start()
        assert self.holding.wait(10), "the other writer never took the lock"
        return self

    def __exit__(self, *_exc: object) -> None:
        self.release.set()
        self._thread.join(10)
