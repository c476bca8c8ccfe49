"""`maka forget [--source S] [--chat C] [--person P] [--from DAY] [--to DAY] [--yes]`: without
--yes, what it would remove (and whether it stops syncing); with it, the request is stored
(stopping a whole source's or chat's syncing, bot/forget/syncing.py) and carried out here,
batch by batch (bot/forget/batch.py), exactly as the service's worker does. The search index forgets
the records when the service's search follower next runs (at once, when it is running)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from bot.config import Settings


def add_forget_parser(sub: Any) -> None:
    forget = sub.add_parser(
        "forget", help="forget a source, chat, person or date range (all given must match)"
    )
    forget.add_argument("--source", help="a source name or kind: email, docs, chats:oc_…")
    forget.add_argument("--chat", help="a chat id or name")
    forget.add_argument("--person", help="an open_id or email address")
    forget.add_argument("--from", dest="since", metavar="DAY", help="YYYY-MM-DD, included")
    forget.add_argument("--to", dest="until", metavar="DAY", help="YYYY-MM-DD, excluded")
    forget.add_argument("--yes", action="store_true", help="remove it (else: only count)")


async def run_forget(settings: Settings, args: argparse.Namespace) -> int:
    from bot.cli.database import open_database
    from bot.forget.batch import LEASE, run_claimed, summary
    from bot.forget.parse import selector
    from bot.forget.syncing import plan_line, stop, stopped_line
    from storage.repos import forgets
    from storage.types import utcnow

    try:
        sel = selector(
            source=args.source,
            chat=args.chat,
            person=args.person,
            since=args.since,
            until=args.until,
            tz=settings.tz,
        )
    except ValueError as exc:
        print(f"maka forget: {exc}", file=sys.stderr)
        return 2
    db = await open_database(settings, read_only=not args.yes)
    try:
        if not args.yes:
            async with db.read() as tx:
                counts = await forgets.count_matching(tx, sel)
                syncing = await plan_line(tx, sel)
            print(
                f"would forget {sel.describe()}: {counts['records']} records, "
                f"{counts['attachments']} attachments (and what cites them); --yes to do it"
            )
            if syncing:
                print(syncing)
            return 0
        owner = f"cli:forget:{os.getpid()}"
        now = utcnow()
        async with db.write() as tx:
            request_id = await forgets.create(tx, sel, "cli", now)
            stopped = await stop(tx, sel, request_id, now)
        if stopped:
            print(stopped_line(sel, stopped))
        async with db.write() as tx:
            request = await forgets.claim_due(tx, owner=owner, now=utcnow(), lease=LEASE)
        if request is None or request.id != request_id:
            print(f"forget #{request_id} stored; a running service carries it out")
            return 0
        progress = await run_claimed(db, request, owner)
        if progress is None:
            print(f"forget #{request_id}: another process took it over", file=sys.stderr)
            return 1
        print(f"forgot {sel.describe()} (#{request_id}): removed {summary(progress.removed)}")
        return 0
    finally:
        await db.dispose()
