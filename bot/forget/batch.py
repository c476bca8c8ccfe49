"""One batch of a forget request, and running a request to its end.

A batch, in one transaction: the next records the request covers (after its cursor) become
tombstones (the search follower deletes their documents), their attachments go and each blob
no other attachment uses, memory index entries and notebook notes citing them are deleted
(their words may repeat the records'), and the turn logs that showed a forgotten chat message
to the model are redacted as a recall redacts them. The request's cursor and counts commit
with it, so a failure rolls the batch back and the next try resumes there.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from prometheus_client import Counter
from sqlalchemy.ext.asyncio import AsyncSession

from bot.host.backoff import backoff, error_line
from bot.host.notify import Notifier
from sources.feishu import records as feishu_source
from storage.db import Database
from storage.models import ForgetRequest, SourceRecord
from storage.repos import forgets, inbox, memory_indexes, sessions
from storage.repos import sources as source_records
from storage.types import utcnow

BATCH = 200  # records a batch removes: a transaction that stays short on a busy database
LEASE = timedelta(minutes=2)
FORGOTTEN = Counter("maka_forgotten_records_total", "Records removed by forget requests")
TOPICS = (source_records.RECORDS_TOPIC, sessions.SESSION_INDEX_TOPIC)
KEYS = ("records", "attachments", "blobs", "index_entries", "notes", "logs_redacted")


class LeaseLost(Exception):
    """Another process took the request over (this one stalled): its batch is rolled back."""


@dataclass
class Progress:
    done: bool
    removed: dict[str, int]


async def run_batch(
    db: Database,
    request: ForgetRequest,
    owner: str,
    notifier: Notifier | None = None,
    size: int = BATCH,
) -> Progress:
    """Remove the next batch; the request's new state."""
    sel = forgets.Selector.from_json(request.selector)
    now = utcnow()
    async with db.write() as tx:
        row = await forgets.get(tx, request.id)
        if row is None or row.lease_owner != owner:
            raise LeaseLost(f"forget #{request.id} is no longer held by {owner}")
        batch = await forgets.matching_after(tx, sel, row.cursor, size)
        removed = {k: int(row.removed.get(k, 0)) for k in KEYS}
        for key, n in (await _remove(tx, batch, now)).items():
            removed[key] += n
        cursor = batch[-1].id if batch else row.cursor
        done = len(batch) < size
        if not await forgets.advance(
            tx, request.id, owner, cursor=cursor, removed=removed, done=done, now=now, lease=LEASE
        ):
            raise LeaseLost(f"forget #{request.id} is no longer held by {owner}")
        if notifier is not None:  # other replicas' followers hear of it at commit
            await notifier.publish(tx, *TOPICS)
    if notifier is not None:  # the search followers index the tombstones and redactions now
        for topic in TOPICS:
            notifier.wake_local(topic)
    return Progress(done, removed)


async def _remove(tx: AsyncSession, batch: list[SourceRecord], now: datetime) -> dict[str, int]:
    live = [r for r in batch if not source_records.is_tombstone(r.payload)]
    if not live:
        return {}
    logs = 0
    for record in live:
        logs += await _redact_logs(tx, record, now)
    attachments, blobs = await forgets.drop_attachments(tx, live)
    seqs = await source_records.remove_records(
        tx, [(r.id, r.source, r.external_id, r.scope) for r in live], now
    )
    entries = await memory_indexes.forget_records(tx, seqs, now, whole=True)
    notes = await forgets.drop_notes(tx, seqs)
    FORGOTTEN.inc(len(seqs))
    return {
        "records": len(seqs),
        "attachments": attachments,
        "blobs": blobs,
        "index_entries": entries,
        "notes": notes,
        "logs_redacted": logs,
    }


async def _redact_logs(tx: AsyncSession, record: SourceRecord, now: datetime) -> int:
    """A chat message the Bot was shown: its words leave the turn logs, as a recall's do, and
    if it still waits for its turn, no turn takes it."""
    if not record.source.startswith(f"{feishu_source.KIND}:") or "#" in record.external_id:
        return 0
    item = await inbox.item_of(tx, f"{feishu_source.KIND}:{record.external_id}")
    if item is None or item.item_id is None or item.conversation_id is None:
        return 0
    await inbox.drop_waiting(tx, item.item_id, now)
    if item.created_at is None:
        return 0
    return await sessions.redact_item(
        tx, item.conversation_id, item.item_id, since=item.created_at, words=item.words, now=now
    )


def retry_in(attempts: int) -> timedelta:
    return timedelta(seconds=backoff(attempts, first=5.0, most=600.0))


async def run_claimed(
    db: Database,
    request: ForgetRequest,
    owner: str,
    notifier: Notifier | None = None,
    size: int = BATCH,
) -> Progress | None:
    """Carry a claimed request to its end, batch by batch; a failing batch is rolled back and
    the request backed off (parked after forgets.PARK_AFTER failures). None when it failed."""
    while True:
        try:
            progress = await run_batch(db, request, owner, notifier, size)
        except LeaseLost:
            return None
        except Exception as exc:
            async with db.write() as tx:
                await forgets.record_failure(
                    tx, request.id, owner, error=error_line(exc), now=utcnow(), retry_in=retry_in
                )
            raise
        if progress.done:
            return progress


def summary(removed: dict[str, int]) -> str:
    parts = [f"{removed.get(k, 0)} {k.replace('_', ' ')}" for k in KEYS]
    return ", ".join(parts)
