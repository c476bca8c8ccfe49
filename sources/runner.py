"""Runs adapters against the database: claims a source by lease, observes or syncs it, and
commits every page's records together with its cursor.

Each source row is one unit of work with a lease (`storage.claims`), so only one process syncs
a given source at a time, across replicas and the `maka sync` command. A page is stored only
if its writer still holds the lease (checked in the same transaction), and a heartbeat keeps
the lease while a slow page is being fetched. A failed observation or sync is recorded on the
source (`last_error`, `last_error_at`) and shown by `maka sync status` and `/sync status`; it
is never reported as "no changes".

The account rows (`feishu`, `email`: a source named after its adapter's kind) hold what
observation found and its errors (the chat list, the login); the unit rows (`feishu:<chat>`,
`email:<mailbox>`) hold each unit's cursors and records.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from sources.base import (
    Cursor,
    FileOf,
    NoProgress,
    Progress,
    Removal,
    SourceAdapter,
    SyncRequest,
    Unit,
    UnitState,
    describe_error,
)
from storage.claims import lease_is_free
from storage.db import Database
from storage.models import Source
from storage.repos import attachments, memory_indexes, source_records, source_stops
from storage.repos import sources as repo
from storage.repos.source_records import NewRecord
from storage.repos.source_stops import stopped_line
from storage.types import utcnow

log = logging.getLogger(__name__)

DEFAULT_LEASE = timedelta(minutes=2)
# Committed new records, with their seq: e.g. to index them.
RecordsHook = Callable[[list[tuple[int, NewRecord]]], Awaitable[None]]
# A page that stored or removed something committed, by the unit's name: e.g. to wake what
# waits on that unit's items.
ChangedHook = Callable[[str], Awaitable[None]]


class LeaseLost(Exception):
    """Another process took this source over (our lease lapsed): stop without writing."""


@dataclass(frozen=True)
class Claimed:
    id: int
    name: str
    kind: str
    scope: str | None
    title: str | None
    observed_cursor: Cursor | None
    synced_cursor: Cursor | None
    wanted_at: datetime | None
    request: dict[str, Any] | None
    stopped: str | None = None  # why it is not synced: the owner forgot it

    @classmethod
    def of(cls, row: Source) -> Claimed:
        return cls(
            row.id,
            row.name,
            row.kind,
            row.scope,
            row.title,
            dict(row.observed_cursor) if row.observed_cursor else None,
            dict(row.synced_cursor) if row.synced_cursor else None,
            row.wanted_at,
            dict(row.request) if row.request else None,
            stopped_line(row),
        )

    @property
    def is_account(self) -> bool:
        return self.name == self.kind


@dataclass
class RunResult:
    name: str
    error: str | None = None
    seen: int = 0  # records read from the source
    new: int = 0  # records stored for the first time
    done: bool = True  # False: stopped early (shutdown); the request stays open
    skipped: str | None = None  # not run (e.g. another process holds it)
    units: list[Unit] = field(default_factory=list)  # what an observation found

    @property
    def ok(self) -> bool:
        return self.error is None and self.skipped is None


def parse_since(value: str | date | datetime | None) -> datetime | None:
    """`2024-05-01` or an ISO datetime → an aware UTC datetime (a date means its midnight)."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value) if "T" in value else date.fromisoformat(value)
    if not isinstance(value, datetime):
        value = datetime.combine(value, time())
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value


def _is(unit_name: str, wanted: str) -> bool:
    """`wanted` names this unit: its full name (`feishu:oc_1`) or its id (`oc_1`)."""
    return wanted in (unit_name, unit_name.split(":", 1)[-1])


class SyncRunner:
    def __init__(
        self,
        db: Database,
        adapters: Mapping[str, SourceAdapter],
        owner: str,
        *,
        lease: timedelta = DEFAULT_LEASE,
        on_records: RecordsHook | None = None,
        on_changed: ChangedHook | None = None,
        on_wanted: Callable[[], Awaitable[None]] | None = None,
        should_stop: Callable[[], bool] = lambda: False,
        not_configured: Mapping[str, str] | None = None,
    ) -> None:
        self.db = db
        self.adapters = dict(adapters)
        self.owner = owner
        self.lease = lease
        self.on_records = on_records
        self.on_changed = on_changed
        self.on_wanted = on_wanted
        self.should_stop = should_stop
        # kind -> why it cannot run here (e.g. "set MAKA_EMAIL_HOST ..."), shown as its error
        self.not_configured = dict(not_configured or {})

    # ---- the worker's path: requested sources, one at a time per call ----------------------

    async def run_next(self, progress: Progress | None = None) -> bool:
        """Claim the longest-waiting requested source and run it; False when none waits."""
        async with self.db.read() as tx:
            if not await repo.has_wanted(tx, utcnow()):
                return False
        async with self.db.write() as tx:
            row = await repo.claim_wanted(tx, owner=self.owner, now=utcnow(), lease=self.lease)
            claimed = Claimed.of(row) if row is not None else None
        if claimed is None:
            return False
        await self.run(claimed, progress or NoProgress())
        return True

    async def run(self, claimed: Claimed, progress: Progress) -> RunResult:
        request = claimed.request or {}
        if claimed.stopped is not None:
            return await self._let_go(claimed)
        if claimed.kind not in self.adapters:
            reason = self.not_configured.get(claimed.kind, f"no {claimed.kind} adapter here")
            await self._finish(claimed, error=f"not configured: {reason}")
            return RunResult(claimed.name, error=reason)
        if claimed.is_account:
            return await self.observe(claimed, request, mark_units=True)
        return await self.sync_unit(
            claimed, SyncRequest(since=parse_since(request.get("since"))), progress
        )

    # ---- the command line's path: observe, then sync every unit now -----------------------

    async def sync_kind(
        self,
        kind: str,
        *,
        since: datetime | None = None,
        only: Sequence[str] | None = None,
        progress: Progress | None = None,
        concurrency: int = 4,
        wait: float = 60.0,
    ) -> list[RunResult]:
        """Observe `kind`, then sync its units (or just `only`), `concurrency` at a time.
        Units another process is syncing are skipped and reported as such."""
        progress = progress or NoProgress()
        await self.ensure_account(kind)
        claimed = await self._claim_named(kind, wait=wait)
        if claimed is None:
            holder = await self._holder(kind)
            return [RunResult(kind, skipped=f"being observed by {holder}")]
        if claimed.stopped is not None:
            return [await self._let_go(claimed)]
        request: dict[str, Any] = {}
        if only:
            request["only"] = list(only)
        observed = await self.observe(claimed, request, mark_units=False)
        if observed.error is not None:
            return [observed]
        names = [u.name for u in observed.units if u.error is None]
        progress.planned(len(names))
        limit = asyncio.Semaphore(max(1, concurrency))

        async def one(name: str) -> RunResult:
            async with limit:
                unit = await self._claim_named(name, wait=0)
                if unit is None:
                    return RunResult(name, skipped=f"being synced by {await self._holder(name)}")
                return await self.sync_unit(unit, SyncRequest(since=since), progress)

        return [observed, *await asyncio.gather(*(one(n) for n in names))]

    # ---- observe -------------------------------------------------------------------------

    async def observe(
        self, claimed: Claimed, request: dict[str, Any], *, mark_units: bool
    ) -> RunResult:
        """Record what the adapter observes (units, their observed cursors, their errors);
        `mark_units` asks for a sync of the units (all syncable ones, or `request["only"]`)."""
        adapter = self.adapters[claimed.kind]
        try:
            observation = await adapter.observe()
        except Exception as exc:
            error = describe_error(exc)
            log.warning("observing %s failed: %s", claimed.kind, error)
            await self._finish(claimed, error=error, propagate=f"observation failed: {error}")
            return RunResult(claimed.name, error=error)
        only = list(request.get("only") or [])
        units = observation.units
        missing = [o for o in only if not any(_is(u.name, o) for u in units)]
        if only:
            wanted = [u for u in units if any(_is(u.name, o) for o in only)]
        else:
            wanted = [u for u in units if u.syncable]
        now = utcnow()
        async with self.db.write() as tx:
            for unit in units:
                await repo.ensure(
                    tx,
                    name=unit.name,
                    kind=claimed.kind,
                    scope=unit.scope,
                    title=unit.title,
                    observed_cursor=unit.observed_cursor,
                    now=now,
                )
                if unit.error is not None:
                    await repo.record_error(tx, [unit.name], unit.error, now)
            seen = {u.name for u in units}
            for row in await repo.all_sources(tx, claimed.kind):
                if row.name != claimed.name and row.name not in seen:
                    gone = dict(row.observed_cursor or {})
                    gone.update(present=False, observed_at=now.isoformat())
                    row.observed_cursor = gone
            if mark_units:
                names = [u.name for u in wanted if u.error is None]
                unit_request = {"since": request["since"]} if request.get("since") else None
                await repo.request_sync(tx, names, now, unit_request)
        if mark_units and wanted and self.on_wanted is not None:
            await self.on_wanted()
        problem = f"not found: {', '.join(sorted(missing))}" if missing else None
        await self._finish(claimed, error=problem, observed_cursor=observation.cursor)
        return RunResult(claimed.name, error=problem, units=wanted)

    # ---- sync one unit -------------------------------------------------------------------

    async def sync_unit(
        self, claimed: Claimed, request: SyncRequest, progress: Progress
    ) -> RunResult:
        if claimed.stopped is not None:
            return await self._let_go(claimed)
        adapter = self.adapters[claimed.kind]
        state = UnitState(
            claimed.name,
            claimed.scope or "",
            claimed.title,
            claimed.observed_cursor,
            claimed.synced_cursor,
        )
        result = RunResult(claimed.name)
        progress.started(claimed.name, claimed.title)
        lost = asyncio.Event()
        heartbeat = asyncio.create_task(self._heartbeat(claimed.id, lost), name="source-lease")
        try:
            async with contextlib.aclosing(adapter.sync(state, request)) as pages:
                async for page in pages:
                    if lost.is_set():
                        raise LeaseLost(f"lost the lease on {claimed.name}")
                    new = await self._commit(
                        claimed, page.records, page.cursor, page.attachments, page.removed
                    )
                    result.seen += len(page.records)
                    result.new += len(new)
                    progress.advanced(
                        claimed.name, seen=result.seen, new=result.new, total=page.total
                    )
                    if new and self.on_records is not None:
                        await self.on_records(new)
                    if (page.records or page.removed) and self.on_changed is not None:
                        await self.on_changed(claimed.name)
                    if self.should_stop():
                        result.done = False
                        break
        except LeaseLost as exc:
            result.error = str(exc)
            log.warning("%s; another process continues it", exc)
            progress.finished(claimed.name, result.error)
            return result  # not ours to finish any more
        except Exception as exc:
            result.error = describe_error(exc)
            log.warning("syncing %s failed: %s", claimed.name, result.error)
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
        await self._finish(claimed, error=result.error, done=result.done)
        progress.finished(claimed.name, result.error)
        return result

    async def _commit(
        self,
        claimed: Claimed,
        records: list[NewRecord],
        cursor: Cursor | None,
        files: Sequence[FileOf] = (),
        removed: Sequence[Removal] = (),
    ) -> list[tuple[int, NewRecord]]:
        now = utcnow()
        async with self.db.write() as tx:
            gone: list[int] = []
            for removal in removed:
                gone += await source_records.remove_message(
                    tx,
                    removal.source,
                    removal.item,
                    scope=removal.scope,
                    now=now,
                    keep=removal.keep,
                )
            await memory_indexes.forget_records(tx, gone, now)
            inserted = await source_records.insert_records(tx, records, now)
            await _store_files(tx, files, {(s, e) for _, s, e in inserted}, now)
            if not await repo.advance(
                tx,
                claimed.id,
                self.owner,
                synced_cursor=cursor,
                added=len(inserted),
                now=now,
                lease=self.lease,
            ):
                raise LeaseLost(f"lost the lease on {claimed.name}")
        if not inserted:
            return []
        by_key = {(r.source, r.external_id): r for r in records}
        return [(seq, by_key[(s, e)]) for seq, s, e in inserted]

    async def _heartbeat(self, source_id: int, lost: asyncio.Event) -> None:
        interval = max(0.05, self.lease.total_seconds() / 3)
        while True:
            await asyncio.sleep(interval)
            try:
                async with self.db.write() as tx:
                    held = await repo.renew(
                        tx, source_id, self.owner, now=utcnow(), lease=self.lease
                    )
            except Exception as exc:  # a database hiccup: the page commit will tell
                log.warning("could not renew a source lease: %s", exc)
                continue
            if not held:
                lost.set()
                return

    # ---- bookkeeping ---------------------------------------------------------------------

    async def ensure_account(self, kind: str) -> None:
        async with self.db.write() as tx:
            await repo.ensure(tx, name=kind, kind=kind, scope=None, title=None, now=utcnow())

    async def _finish(
        self,
        claimed: Claimed,
        *,
        error: str | None,
        done: bool = True,
        observed_cursor: Cursor | None = None,
        propagate: str | None = None,
    ) -> None:
        now = utcnow()
        async with self.db.write() as tx:
            held = await repo.finish(
                tx,
                claimed.id,
                self.owner,
                now=now,
                error=error,
                done=done,
                wanted_at=claimed.wanted_at,
                observed_cursor=observed_cursor,
            )
            if not held:
                log.warning("%s: lease lost before the run was recorded", claimed.name)
            if propagate is not None:
                # Units nobody is syncing show the failure too: their status must not read
                # as "no changes" while the source cannot be reached.
                names = (
                    await tx.scalars(
                        select(Source.name).where(
                            Source.kind == claimed.kind,
                            Source.name != claimed.name,
                            lease_is_free(Source, now),
                        )
                    )
                ).all()
                await repo.record_error(tx, list(names), propagate, now)

    async def _let_go(self, claimed: Claimed) -> RunResult:
        """A stopped source, claimed by name (or before the stop committed): not run."""
        async with self.db.write() as tx:
            await source_stops.let_go(tx, claimed.id, self.owner)
        return RunResult(claimed.name, skipped=claimed.stopped)

    async def _claim_named(self, name: str, *, wait: float) -> Claimed | None:
        deadline = asyncio.get_running_loop().time() + wait
        while True:
            async with self.db.write() as tx:
                row = await repo.claim_named(
                    tx, name, owner=self.owner, now=utcnow(), lease=self.lease
                )
                claimed = Claimed.of(row) if row is not None else None
            if claimed is not None or asyncio.get_running_loop().time() >= deadline:
                return claimed
            await asyncio.sleep(0.5)

    async def _holder(self, name: str) -> str:
        async with self.db.read() as tx:
            return await repo.holder(tx, name, utcnow()) or "another process"

    async def release(self) -> int:
        async with self.db.write() as tx:
            return await repo.release(tx, self.owner)


async def _store_files(
    tx: AsyncSession, files: Sequence[FileOf], new: set[tuple[str, str]], now: datetime
) -> None:
    """The files of the records just inserted: each content once, and a row ready to be read
    (a record seen before had its files stored then)."""
    mine = [f for f in files if (f.attachment.source, f.attachment.message_id) in new]
    for file in mine:
        if file.data is not None and file.attachment.sha256 is not None:
            await attachments.store_blob(tx, file.attachment.sha256, file.data, now)
    await attachments.add_many(tx, [f.attachment for f in mine], now)
