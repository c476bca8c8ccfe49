"""`maka sync feishu|email [CHAT ...] [--since DATE]` and `maka sync status [--json]`.

`maka sync feishu|email` runs the sync in this process with a progress bar on stderr: it
observes, then syncs every unit (a Feishu chat, a mailbox), taking each one's lease like the
service's worker does, so it never syncs a source at the same time as a running service; a
source the service is syncing right now is skipped and reported. Both exit 1 when a source
shows an error. `maka sync status` only reads: it never creates or migrates the database.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from datetime import date
from typing import Any, TextIO

from bot.cli.database import open_database
from bot.config import Settings
from bot.sync.adapters import HOW_TO_CONFIGURE, KINDS, build_adapters
from bot.sync.status import format_table, load_status
from sources.runner import RunResult, SyncRunner, parse_since
from storage.db import DatabaseNotReady


def add_sync_parser(sub: Any) -> None:
    """Add `sync` to the `maka` subcommands (`sub` is the parser's subparsers object)."""
    sync = sub.add_parser("sync", help="sync Feishu history or email now; `sync status` shows all")
    sync.add_argument("what", choices=[*KINDS, "status"])
    sync.add_argument("chats", nargs="*", metavar="CHAT", help="feishu, chats: only these chat ids")
    sync.add_argument(
        "--since", type=date.fromisoformat, metavar="DATE", help="reach back to DATE (YYYY-MM-DD)"
    )
    sync.add_argument("--json", action="store_true", help="status: machine-readable output")


async def run_sync(settings: Settings, args: argparse.Namespace) -> int:
    import logging

    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per API call otherwise
    if args.what == "status":
        if args.chats or args.since:
            print("maka sync status takes only --json", file=sys.stderr)
            return 2
        return await run_sync_status(settings, as_json=args.json)
    if args.what not in ("feishu", "chats") and args.chats:
        print("only `maka sync feishu` and `maka sync chats` take chat ids", file=sys.stderr)
        return 2
    return await run_sync_now(settings, args.what, since=args.since, chats=args.chats)


async def run_sync_status(
    settings: Settings, *, as_json: bool = False, out: TextIO | None = None
) -> int:
    out = out or sys.stdout
    try:
        db = await open_database(settings, read_only=True)
    except DatabaseNotReady as exc:  # one line, the URL's password masked
        print(exc, file=sys.stderr)
        return 1
    try:
        statuses = await load_status(db)
    finally:
        await db.dispose()
    if as_json:
        print(json.dumps([s.to_json() for s in statuses], ensure_ascii=False, indent=2), file=out)
    else:
        print(format_table(statuses, settings.tz), file=out)
    return 1 if any(s.last_error for s in statuses) else 0


async def run_sync_now(
    settings: Settings,
    kind: str,
    *,
    since: date | None = None,
    chats: list[str] | None = None,
    out: TextIO | None = None,
    progress_to: TextIO | None = None,
) -> int:
    from bot.host.workers import new_instance_id
    from bot.memory.search import SearchService, open_index
    from bot.memory.source_index import SourceIndexer

    out = out or sys.stdout
    try:
        db = await open_database(settings, read_only=False)
    except DatabaseNotReady as exc:
        print(exc, file=sys.stderr)
        return 1
    adapters = build_adapters(settings, db, [kind])
    if kind not in adapters:
        await db.dispose()
        print(f"{kind} is not configured: {HOW_TO_CONFIGURE[kind]}", file=sys.stderr)
        return 2
    search = SearchService(open_index(settings))
    indexer = SourceIndexer(db, search)
    runner = SyncRunner(db, adapters, f"cli-{new_instance_id()}", on_records=indexer.after_commit)
    bar = ProgressBar(progress_to or sys.stderr, kind)
    try:
        results = await runner.sync_kind(
            kind,
            since=parse_since(since),
            only=chats or None,
            progress=bar,
            concurrency=4 if kind == "feishu" else 2,
        )
        await indexer.flush()
    finally:
        bar.close()
        await runner.release()
        await indexer.close()
        for adapter in adapters.values():
            await adapter.aclose()
        await search.close()
        await db.dispose()
    return report(results, indexer.failed, out)


def report(results: list[RunResult], unindexed: int, out: TextIO) -> int:
    failed = False
    for r in results:
        if r.skipped:
            print(f"{r.name}: skipped, {r.skipped}", file=out)
        elif r.error:
            failed = True
            print(f"{r.name}: ERROR: {r.error}", file=out)
        elif r.units:
            print(f"{r.name}: observed {len(r.units)} to sync", file=out)
            for unit in r.units:
                if unit.error is not None:
                    failed = True
                    print(f"{unit.name}: ERROR: {unit.error}", file=out)
        else:
            print(f"{r.name}: {r.seen} read, {r.new} new", file=out)
    units = [r for r in results[1:] if not r.skipped]
    print(
        f"done: {sum(r.new for r in units)} new records from {len(units)} sources"
        + (", with errors (see above)" if failed else ""),
        file=out,
    )
    if unindexed:
        print(
            f"warning: {unindexed} records could not be indexed for search; run "
            "`maka search rebuild` (with the embedded index, stop `maka serve` first)",
            file=out,
        )
    return 1 if failed else 0


@dataclass
class _Unit:
    seen: int = 0
    new: int = 0
    total: int | None = None
    done: bool = False


@dataclass
class ProgressBar:
    """A one-line progress bar on a terminal (a line per finished source otherwise)."""

    stream: TextIO
    label: str
    width: int = 24
    units: dict[str, _Unit] = field(default_factory=dict)
    expected: int | None = None
    _drawn: float = 0.0
    _line_len: int = 0

    @property
    def tty(self) -> bool:
        return bool(getattr(self.stream, "isatty", lambda: False)())

    def planned(self, units: int) -> None:
        self.expected = units
        if not self.tty:
            print(f"{self.label}: {units} to sync", file=self.stream, flush=True)

    def started(self, source: str, title: str | None) -> None:
        self.units[source] = _Unit()
        self._draw()

    def advanced(self, source: str, *, seen: int, new: int, total: int | None) -> None:
        unit = self.units.setdefault(source, _Unit())
        unit.seen, unit.new, unit.total = seen, new, total
        self._draw()

    def finished(self, source: str, error: str | None) -> None:
        unit = self.units.setdefault(source, _Unit())
        unit.done = True
        if not self.tty:
            state = f"ERROR {error}" if error else f"{unit.seen} read, {unit.new} new"
            print(f"{self.label}: {source}: {state}", file=self.stream, flush=True)
        self._draw(force=True)

    def _fraction(self) -> float | None:
        if not self.units:
            return None
        parts = []
        for unit in self.units.values():
            if unit.done:
                parts.append(1.0)
            elif unit.total:
                parts.append(min(1.0, unit.seen / unit.total))
            else:
                parts.append(0.0)
        return sum(parts) / max(len(parts), self.expected or 0)

    def _draw(self, force: bool = False) -> None:
        if not self.tty:
            return
        now = time.monotonic()
        if not force and now - self._drawn < 0.1:
            return
        self._drawn = now
        fraction = self._fraction() or 0.0
        filled = int(fraction * self.width)
        done = sum(1 for u in self.units.values() if u.done)
        seen = sum(u.seen for u in self.units.values())
        new = sum(u.new for u in self.units.values())
        line = (
            f"{self.label} [{'#' * filled}{'.' * (self.width - filled)}] "
            f"{done}/{len(self.units)} sources, {seen} read, {new} new"
        )
        pad = max(0, self._line_len - len(line))
        self.stream.write("\r" + line + " " * pad)
        self.stream.flush()
        self._line_len = len(line)

    def close(self) -> None:
        if self.tty and self._line_len:
            self._draw(force=True)
            self.stream.write("\n")
            self.stream.flush()
