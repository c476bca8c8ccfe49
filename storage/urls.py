"""Database URLs as operators write them, turned into the async drivers we run on."""

from __future__ import annotations

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError


class DatabaseUrlError(ValueError):
    pass


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
    except ArgumentError:
        raise DatabaseUrlError(
            f"not a database URL: {raw!r}; expected postgresql://user@host:5432/db "
            "or sqlite:///path/to/file.db"
        ) from None
    driver = _ASYNC_DRIVERS.get(url.drivername)
    if driver is None:
        raise DatabaseUrlError(
            f"unsupported database {url.drivername!r}; use postgresql:// or sqlite:///"
        )
    if driver.startswith("sqlite") and not url.database:
        raise DatabaseUrlError("sqlite URL needs a file path, e.g. sqlite:///./.maka/maka.db")
    return url.set(drivername=driver).render_as_string(hide_password=False)


def is_sqlite(url: str | URL) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def asyncpg_dsn(url: str | URL) -> str:
    """The plain libpq-style DSN asyncpg.connect() takes (for LISTEN connections)."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
