"""Entry point of the `maka` console script."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from bot.cli.forget import add_forget_parser
from bot.config import ConfigError, Role, Settings, load_settings
from bot.parsing import parse_whole
from bot.sync.cli import add_sync_parser
from storage.db import DatabaseNotReady
from storage.search.base import MAX_LIMIT


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="maka", description="Maka Assistant")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the service")
    serve.add_argument("--role", choices=[r.value for r in Role], default=Role.ALL.value)
    sub.add_parser("migrate", help="apply database migrations")
    sub.add_parser("doctor", help="check settings, database, search, Feishu and model")
    tokenize = sub.add_parser("tokenize", help="print the search tokens of TEXT")
    tokenize.add_argument("text", nargs="+")
    search = sub.add_parser(
        "search", help="search the index (`maka search rebuild` rebuilds it from the database)"
    )
    search.add_argument("query", nargs="+", help="words to search for, or: rebuild")
    search.add_argument(
        "--session",
        action="append",
        dest="sessions",
        metavar="ID",
        help="only these Session ids (repeatable)",
    )
    search.add_argument("--json", action="store_true", help="machine-readable output")
    search.add_argument("--limit", type=_hits, default=10, help=f"1 to {MAX_LIMIT} hits")
    add_sync_parser(sub)
    backup = sub.add_parser("backup", help="copy the database to FILE (while serving is fine)")
    backup.add_argument("file", type=Path)
    restore = sub.add_parser(
        "restore", help="replace the database by backup FILE (stop maka serve first)"
    )
    restore.add_argument("file", type=Path)
    restore.add_argument(
        "--force", action="store_true", help="replace a database that already holds data"
    )
    add_forget_parser(sub)
    prune = sub.add_parser("prune", help="prune old operational rows now (retention)")
    prune.add_argument("--dry-run", action="store_true", help="only count what would go")
    index = sub.add_parser("index", help="memory indexes: list, or show NAME")
    index.add_argument("action", choices=["list", "show"])
    index.add_argument("name", nargs="?")
    evaluation = sub.add_parser("eval", help="evaluations")
    evaluation.add_argument("what", choices=["recall"])
    evaluation.add_argument("--dataset", required=True, type=Path)
    evaluation.add_argument("--router", choices=["reference", "model"], default="reference")
    evaluation.add_argument("--json", action="store_true")
    return parser


def _hits(text: str) -> int:
    try:
        return parse_whole(text, least=1, most=MAX_LIMIT)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings()
    except ConfigError as exc:
        for line in exc.lines:
            print(f"FAIL  settings: {line}" if args.command == "doctor" else line, file=sys.stderr)
        return 2
    logging.basicConfig(
        level=settings.log_level.value,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("alembic").setLevel(logging.WARNING)
    if args.command == "serve":
        from bot.cli.serve import limit_malloc_arenas

        limit_malloc_arenas()  # before the loop: its threads must not get arenas of their own
    try:
        return asyncio.run(_run(args, settings))
    except DatabaseNotReady as exc:  # one line (password masked), not a traceback
        print(exc, file=sys.stderr)
        return 1


async def _run(args: argparse.Namespace, settings: Settings) -> int:
    if args.command == "serve":
        from bot.cli.serve import serve

        return await serve(settings, Role(args.role))
    if args.command == "migrate":
        from storage.db import create_database
        from storage.migrate import current_revision, migrate

        db = create_database(settings.resolved_database_url)
        try:
            await db.reach()
            await migrate(db)
            print(f"database schema at {await current_revision(db)}")
        finally:
            await db.dispose()
        return 0
    if args.command == "doctor":
        from bot.cli.doctor import run_doctor

        checks = await run_doctor(settings)
        for check in checks:
            print(check.line())
        return 0 if all(c.ok for c in checks) else 1
    if args.command == "tokenize":
        from bot.cli.search import run_tokenize

        return run_tokenize(settings, " ".join(args.text))
    if args.command == "search":
        from bot.cli.search import run_rebuild, run_search

        if args.query == ["rebuild"] and not args.sessions:
            return await run_rebuild(settings)
        return await run_search(
            settings, " ".join(args.query), args.sessions, args.json, args.limit
        )
    if args.command == "sync":
        from bot.sync.cli import run_sync

        return await run_sync(settings, args)
    if args.command == "backup":
        from bot.cli.backup import run_backup

        return await run_backup(settings, args.file)
    if args.command == "restore":
        from bot.cli.backup import run_restore

        return await run_restore(settings, args.file, force=args.force)
    if args.command == "prune":
        from bot.cli.prune import run_prune

        return await run_prune(settings, dry_run=args.dry_run)
    if args.command == "index":
        from bot.cli.indexes import run_index

        if (args.action == "show") != bool(args.name):
            print("usage: maka index list | maka index show NAME", file=sys.stderr)
            return 2
        return await run_index(settings, args.action, args.name)
    if args.command == "forget":
        from bot.cli.forget import run_forget

        return await run_forget(settings, args)
    if args.command == "eval":
        from bot.cli.evaluate import run_recall_eval

        return await run_recall_eval(settings, args.dataset, args.router, args.json)
    raise AssertionError(args.command)


if __name__ == "__main__":
    sys.exit(main())
