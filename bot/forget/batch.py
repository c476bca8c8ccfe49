"""One batch of a forget request, and running a request to its end.

A batch, in one transaction: the next records the request covers (after its cursor) become
tombstones (the search follower deletes their documents), their attachments go and each blob
no other attachment uses, memory index entries and notebook notes citing them are deleted
(their words may repeat the records'), discovery findings citing them (or those notes) are
withdrawn, and what the Bot's turns kept of a forgotten chat message (or of a withdrawn
finding it told) goes as a recall's does: the turn logs that showed it, the turn's answer
in its log and in the outbox, the summaries made since (storage/repos/redactions.py). A
forgotten chat message's stored inbound event and inbox item keep their row and key (Feishu
redelivers: it must stay a duplicate) but lose their body. The request's cursor and counts
commit with it, so a failure rolls the batch back and the next try resumes there.
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
from storage.repos import (
    discovery,
    forgets,
    inbox,
    memory_indexes,
    redactions,
    sessions,
    source_records,
    taken_back,
)
from storage.types import utcnow

BATCH = 200  # records a batch removes: a transaction that stays short on a busy database
LEASE = timedelta(minutes=2)
FORGOTTEN = Counter("maka_forgotten_records_total", "Records removed by forget requests")
TOPICS = (source_records.RECORDS_TOPIC, sessions.SESSION_INDEX_TOPIC)
KEYS = (
    "records",
    "attachments",
    "blobs",
    "index_entries",
    "notes",
    "logs_redacted",
    "answers_redacted",
    "summaries_dropped",
    "findings_withdrawn",
    "payloads_blanked",
)


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
    counts = dict.fromkeys(KEYS, 0)
    # Read (its words, its turn) before its item is blanked below.
    messages = [r.external_id for r in live if _chat_message(r)]
    for message_id in messages:
        _add(counts, await _redact(tx, inbox.message_key(feishu_source.PLATFORM, message_id), now))
    counts["attachments"], counts["blobs"] = await forgets.drop_attachments(tx, live)
    seqs = await source_records.remove_records(
        tx, [(r.id, r.source, r.external_id, r.scope) for r in live], now
    )
    counts["records"] = len(seqs)
    counts["index_entries"] = await memory_indexes.forget_records(tx, seqs, now, whole=True)
    notes = await forgets.drop_notes(tx, seqs)
    counts["notes"] = len(notes)
    findings = await forgets.withdraw_findings(tx, seqs, notes)
    counts["findings_withdrawn"] = len(findings)
    told = [discovery.finding_item_key(f) for f in findings]
    for key in told:  # the turn that told the owner a finding may have repeated its words
        _add(counts, await _redact(tx, key, now))
    keys = [inbox.message_key(feishu_source.PLATFORM, m) for m in messages]
    counts["payloads_blanked"] = await taken_back.blank_events(
        tx, feishu_source.PLATFORM, messages
    ) + await taken_back.blank_items(tx, keys + told)
    FORGOTTEN.inc(len(seqs))
    return counts


def _chat_message(record: SourceRecord) -> bool:
    """A Feishu chat message itself (not one of its attachments' or forward's records)."""
    return record.source.startswith(f"{feishu_source.KIND}:") and "#" not in record.external_id


def _add(counts: dict[str, int], done: redactions.Redacted) -> None:
    counts["logs_redacted"] += done.logs
    counts["answers_redacted"] += done.answers
    counts["summaries_dropped"] += done.summaries


async def _redact(tx: AsyncSession, item_key: str, now: datetime) -> redactions.Redacted:
    """An inbox item (a chat message, a finding told): if it still waits for its turn, no
    turn takes it; what the turns kept of it goes as a recall's does (one rule:
    storage/repos/redactions.py)."""
    item = await taken_back.item_of(tx, item_key)
    if item is None or item.item_id is None or item.conversation_id is None:
        return redactions.Redacted()
    await taken_back.drop_waiting(tx, item.item_id, now)
    return await redactions.redact_message_item(tx, item, now)


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
