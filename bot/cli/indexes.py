"""`maka index list` and `maka index show NAME`: the operator's view of memory indexes (all
of them: the operator runs the service). Read-only: the database is not migrated here."""

from __future__ import annotations

import sys

from sqlalchemy.exc import SQLAlchemyError

from bot.config import Settings
from bot.memory.indexes.commands import describe, list_line
from storage.db import create_database
from storage.repos import memory_indexes as repo


async def run_index(settings: Settings, action: str, name: str | None) -> int:
    db = create_database(settings.resolved_database_url)
    try:
        async with db.read() as s:
            if action == "list":
                indexes = await repo.all_indexes(s)
                print("\n".join(list_line(i) for i in indexes) or "no indexes")
                return 0
            assert name is not None
            index = await repo.by_name(s, name)
            if index is None:
                print(f"no index named {name!r}", file=sys.stderr)
                return 1
            entries = await repo.count_entries(s, index.id)
        print(describe(index, entries, settings.tz, has_model=settings.model_configured))
        return 1 if index.status in ("check_failed", "maintenance_failed") else 0
    except SQLAlchemyError as exc:
        print(f"cannot read indexes ({type(exc).__name__}); run `maka migrate`?", file=sys.stderr)
        return 1
    finally:
        await db.dispose()
