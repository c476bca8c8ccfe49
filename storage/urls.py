"""Database URLs as operators write them, turned into the async drivers we run on.

A URL may hold a password: messages show it through `masked_database_url`, never as given."""

from __future__ import annotations

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError


class DatabaseUrlError(ValueError):
    """The message never contains the URL (it may hold a password)."""


_ASYNC_DRIVERS = {
    "postgres": "postgresql+asyncpg",
    "postgresql": "postgresql+asyncpg",
    "postgresql+asyncpg": "postgresql+asyncpg",
    "sqlite": "sqlite+aiosqlite",
    "sqlite+aiosqlite": "sqlite+aiosqlite",
}


def normalize_database_url(raw: str) -> str:
    """Accept postgres://, postgresql://, sqlite:///path (and their async forms)."""
    try:
        url = make_url(raw.strip())
    except (ArgumentError, ValueError):  # ValueError: a port that is no number
        raise DatabaseUrlError(
            "not a database URL (or its port is no number); "
            "expected postgresql://user:password@host:5432/db "
            "or sqlite:///path/to/file.db"
        ) from None
    driver = _ASYNC_DRIVERS.get(url.drivername)
    if driver is None:
        raise DatabaseUrlError(
            f"unsupported database {url.drivername!r}; use postgresql:// or sqlite:///"
        )
    if driver.startswith("sqlite"):
        sqlite_file_of(url)
    return url.set(drivername=driver).render_as_string(hide_password=False)


def sqlite_file_of(url: str | URL) -> str:
    """The file a SQLite URL names. A memory database is refused: each connection would get an
    empty one of its own, and everything the assistant stored would be gone when it stops."""
    url = make_url(url)
    path = url.database or ""
    if not path:
        raise DatabaseUrlError("sqlite URL needs a file path, e.g. sqlite:///./.maka/maka.db")
    if ":memory:" in path or "mode=memory" in path or url.query.get("mode") == "memory":
        raise DatabaseUrlError(
            "a memory SQLite database is lost when the service stops and is not shared "
            "between its connections; give a file path, e.g. sqlite:///./.maka/maka.db"
        )
    return path


def masked_database_url(raw: str | URL) -> str | None:
    """`raw` fit to print: the password (also a `password=` query value) as ***, the driver as
    its plain backend name (postgresql://user:***@host/db); None when it cannot be parsed."""
    try:
        url = make_url(raw.strip() if isinstance(raw, str) else raw)
    except (ArgumentError, ValueError):
        return None
    query = {k: ("***" if "password" in k.lower() else v) for k, v in url.query.items()}
    url = url.set(drivername=url.get_backend_name(), query=query)
    return url.render_as_string(hide_password=True)


def is_sqlite(url: str | URL) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def asyncpg_dsn(url: str | URL) -> str:
    """The plain libpq-style DSN asyncpg.connect() takes (for LISTEN connections)."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
