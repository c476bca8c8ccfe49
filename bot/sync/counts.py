"""Folds the per-source record counts' pending changes (appended by PostgreSQL's triggers
on `source_records`, migration 0029) into the counts, so that `/sync status` and the status
page read a row a source however long the history. Woken by the records' own topic; on
SQLite there is never anything to fold."""

from __future__ import annotations

from bot.host.workers import Worker
from storage.db import Database
from storage.repos import source_records

FOLD_PAUSE = 1.0  # seconds: under an ingest burst, a fold a second, not one per batch


class RecordCountsWorker(Worker):
    name = "record-counts"
    topics = (source_records.RECORDS_TOPIC,)

    def __init__(self, db: Database) -> None:
        self.db = db

    async def run_once(self) -> bool:
        if self.db.is_sqlite:
            return False
        async with self.db.write() as tx:
            return await source_records.fold_record_counts(tx) > 0

    def pause_after_work(self) -> float:
        return FOLD_PAUSE
