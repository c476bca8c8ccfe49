"""`maka prune [--dry-run]`: one retention pass now (bot/host/retention.py), one line per
table. A dry run only reads: it counts what would go."""

from __future__ import annotations

import os
import socket
import sys

from bot.cli.database import open_database
from bot.config import Settings
from bot.host.retention import Pruner, PruneReport, RetentionPolicy
from storage.repos import retention as repo


async def run_prune(settings: Settings, *, dry_run: bool) -> int:
    db = await open_database(settings, read_only=dry_run)
    try:
        owner = f"maka-prune-{socket.gethostname()}-{os.getpid()}"
        policy = RetentionPolicy.from_settings(settings)
        report = await Pruner(db, policy, owner).prune(dry_run=dry_run)
    finally:
        await db.dispose()
    if not report.ran:
        print("not pruned: another process is pruning now (lease `retention`)", file=sys.stderr)
        return 1
    print("\n".join(report_lines(report, policy, dry_run=dry_run)))
    return 1 if report.error else 0


def report_lines(report: PruneReport, policy: RetentionPolicy, *, dry_run: bool) -> list[str]:
    verb = "would remove" if dry_run else "removed"
    lines = []
    for table in repo.PRUNED_TABLES:
        days = policy.days.get(table.name, 0)
        kept = f"keeps {days} days" if days > 0 else "kept forever"
        size = report.sizes.get(table.name)
        rows = f", {size} rows now" if size is not None else ""
        lines.append(f"{table.name}: {verb} {report.deleted.get(table.name, 0)} ({kept}{rows})")
    if report.error:
        lines.append(f"errors: {report.error}")
    return lines
