"""`maka forget` as an operator runs it (a real subprocess): it counts first, removes only
with --yes, and says what it removed; a missing target is one line."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select

from storage.db import create_database
from storage.migrate import migrate
from storage.models import SourceRecord
from storage.repos import source_records as source_repo
from storage.repos.source_records import NewRecord, is_tombstone
from storage.types import utcnow
from tests.cli.test_commands import _env, _run


async def test_maka_forget_counts_then_removes_a_chat_with_yes(tmp_path: Path) -> None:
    env = _env(tmp_path)
    (tmp_path / "data").mkdir()
    db = create_database(f"sqlite+aiosqlite:///{tmp_path / 'data' / 'maka.db'}")
    try:
        await migrate(db)
        async with db.write() as tx:
            await source_repo.insert_records(
                tx,
                [
                    NewRecord("feishu:oc_team", "m1", "group:oc_team", "falcon", None, "ou_a"),
                    NewRecord("feishu:oc_other", "m2", "group:oc_other", "kestrel", None, "ou_a"),
                ],
                utcnow(),
            )

        code, out, err = await _run(["forget", "--chat", "oc_team"], env)
        assert code == 0 and "would forget chat oc_team: 1 records" in out, (out, err)
        code, out, err = await _run(["forget", "--chat", "oc_team", "--yes"], env)
        assert code == 0 and "forgot chat oc_team (#1): removed 1 records" in out, (out, err)
        async with db.read() as tx:
            rows = (await tx.scalars(select(SourceRecord))).all()
        assert {r.text for r in rows if not is_tombstone(r.payload)} == {"kestrel"}

        code, out, err = await _run(["forget", "--yes"], env)
        assert code == 2 and err.strip() == (
            "maka forget: say what to forget: a source, chat, person or date range"
        ), err
    finally:
        await db.dispose()
