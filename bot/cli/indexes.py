"""`maka index list` and `maka index show NAME`: the operator's view of memory indexes (all
of them: the operator runs the service). Read-only: the database is not created or migrated
here."""

from __future__ import annotations

import sys

from bot.cli.database import open_database
from bot.config import Settings
from bot.memory.indexes.commands import describe, list_line
from storage.repos import memory_indexes as repo


async def run_index(settings: Settings, action: str, name: str | None) -> int:
    db = await open_database(settings, read_only=True)
    try:
        async with db.read() as tx:
            if action == "list":
                indexes = await repo.all_indexes(tx)
                print("\n".join(list_line(i) for i in indexes) or "no indexes")
                return 0
            assert name is not None
            index = await repo.by_name(tx, name)
            if index is None:
                print(f"no index named {name!r}", file=sys.stderr)
                return 1
            entries = await repo.count_entries(tx, index.id)
        print(describe(index, entries, settings.tz, has_model=settings.model_configured))
        return 1 if index.status in ("check_failed", "maintenance_failed") else 0
    finally:
        await db.dispose()
