"""What `maka sync status` and `/sync status` show: per source its records, last success,
last error, cursors and whether a sync is running or requested. A source whose last run
failed reads as an error, never as "no changes"; one a forget stopped says so, and since when."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, tzinfo
from typing import Any

from bot.memory.session_index import INDEX_SOURCE as SESSIONS_INDEX
from storage.db import Database
from storage.repos import sessions as sessions_repo
from storage.repos import source_records
from storage.repos import sources as repo
from storage.repos.source_stops import stopped_line
from storage.types import utcnow


@dataclass(frozen=True)
class SourceStatus:
    name: str
    kind: str
    scope: str | None
    title: str | None
    records: int
    last_success_at: datetime | None
    last_error: str | None
    last_error_at: datetime | None
    state: str  # stopped | error | syncing | requested | ok | never synced
    syncing_by: str | None
    wanted_at: datetime | None
    observed_cursor: dict[str, Any] | None
    synced_cursor: dict[str, Any] | None
    stopped: str | None = None  # "stopped by forget #3 on 2026-12-06": not synced any more

    @property
    def is_account(self) -> bool:
        return self.name == self.kind or self.kind == "index"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("last_success_at", "last_error_at", "wanted_at"):
            data[key] = data[key].isoformat() if data[key] else None
        return data


async def load_status(db: Database) -> list[SourceStatus]:
    now = utcnow()
    async with db.read() as tx:
        rows = await repo.all_sources(tx)
        counts = await source_records.counts_by_source(tx)
        newest_record = await source_records.max_seq(tx)
        newest_event = await sessions_repo.max_event_id(tx)
    out = []
    for row in rows:
        leased = row.lease_expires_at is not None and row.lease_expires_at >= now
        if row.stopped_at is not None:
            state = "stopped"
        elif row.last_error:
            state = "error"
        elif leased:
            state = "syncing"
        elif row.wanted_at is not None:
            state = "requested"
        elif row.last_success_at is not None:
            state = "ok"
        else:
            state = "never synced"
        observed = row.observed_cursor
        if row.kind == "index":  # a search follower: how far it has read
            newest = newest_event if row.name == SESSIONS_INDEX else newest_record
            behind = newest - int((row.synced_cursor or {}).get("seq", 0))
            if not row.last_error:
                state = "ok" if behind <= 0 else "indexing"
            observed = {"newest_seq": newest}
        out.append(
            SourceStatus(
                name=row.name,
                kind=row.kind,
                scope=row.scope,
                title=row.title,
                records=counts.get(row.name, 0),
                last_success_at=row.last_success_at,
                last_error=row.last_error,
                last_error_at=row.last_error_at,
                state=state,
                syncing_by=row.lease_owner if leased else None,
                wanted_at=row.wanted_at,
                observed_cursor=observed,
                synced_cursor=row.synced_cursor,
                stopped=stopped_line(row),
            )
        )
    return out


def _when(value: datetime | None, tz: tzinfo) -> str:
    return value.astimezone(tz).strftime("%Y-%m-%d %H:%M") if value else "never"


def describe(status: SourceStatus, tz: tzinfo) -> str:
    """One line: where it is, how much we have, and how it went."""
    label = status.name + (f" ({status.title})" if status.title and not status.is_account else "")
    if status.is_account:
        detail = _observation(status)
    else:
        detail = f"{status.records} records, last success {_when(status.last_success_at, tz)}"
    line = f"{label}: {detail}"
    if status.stopped:
        return f"{line}; {status.stopped}, not synced until /sync resume {status.name}"
    if status.last_error:
        line += f"; ERROR at {_when(status.last_error_at, tz)}: {status.last_error}"
    if status.syncing_by:
        line += f"; syncing now ({status.syncing_by})"
    elif status.wanted_at is not None:
        line += "; sync requested"
    return line


def _observation(status: SourceStatus) -> str:
    cursor = status.observed_cursor or {}
    if status.kind == "index":
        seq = (status.synced_cursor or {}).get("seq", 0)
        rows = "session events" if status.name == SESSIONS_INDEX else "records"
        what = f"{rows} indexed for search up to seq {seq} of {cursor.get('newest_seq', 0)}"
    elif status.kind == "feishu" and "groups" in cursor:
        what = f"{cursor['groups']} groups, {cursor.get('direct', 0)} direct chats"
    elif status.kind == "email" and "mailboxes" in cursor:
        what = f"{cursor.get('user')} at {cursor.get('server')}, {cursor['mailboxes']} mailboxes"
    else:
        what = "not observed yet"
    return what


def format_table(statuses: list[SourceStatus], tz: tzinfo) -> str:
    if not statuses:
        return (
            "No sources yet. Configure Feishu or email (MAKA_EMAIL_HOST, ...) and run "
            "`maka sync feishu` or `maka sync email`."
        )
    header = f"{'source':<34} {'scope':<26} {'records':>8}  {'last success':<16}  {'state':<12}"
    lines = [header, "-" * len(header)]
    errors, stopped = [], []
    for s in statuses:
        name = s.name if len(s.name) <= 34 else s.name[:33] + "…"
        scope = (s.scope or "-")[:26]
        records = "-" if s.is_account else str(s.records)
        lines.append(
            f"{name:<34} {scope:<26} {records:>8}  {_when(s.last_success_at, tz):<16}  "
            f"{s.state:<12}"
        )
        if s.last_error:
            errors.append(f"  {s.name}: {_when(s.last_error_at, tz)}: {s.last_error}")
        if s.stopped:
            stopped.append(f"  {s.name}: {s.stopped}")
    if errors:
        lines += ["", "errors:", *errors]
    if stopped:
        lines += ["", "stopped (the owner's /sync resume NAME turns one back on):", *stopped]
    return "\n".join(lines)
