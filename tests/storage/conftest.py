"""What the SQLite-only storage tests share."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from storage.db import Database, create_database
from storage.migrate import migrate


@pytest.fixture
async def sqlite_db(tmp_path: Path) -> AsyncIterator[Database]:
    """A migrated SQLite database in a file of its own (whatever `database_url` says)."""
    db = create_database(f"sqlite+aiosqlite:///{tmp_path / 'maka.db'}")
    await migrate(db)
    yield db
    await db.dispose()
