"""0019 keeps the owner's earlier reactions: `findings.feedback` (their next words, as the
heartbeat recorded them before) becomes a `words` row of `finding_feedback`, and a
downgrade puts it back (both databases)."""

from __future__ import annotations

from alembic import command
from sqlalchemy import bindparam, select, text

from storage.db import create_database
from storage.migrate import alembic_config, migrate
from storage.models import Finding, FindingFeedback
from storage.types import JSONType, UTCDateTime, utcnow
from tests.storage.test_migrations import empty_database_url  # noqa: F401  (fixture)

WORDS = "not useful, I knew that"


async def test_earlier_feedback_survives_the_move_to_finding_feedback_and_back(
    empty_database_url: str,  # noqa: F811
) -> None:
    db = create_database(empty_database_url)
    now = utcnow()
    at = bindparam("at", type_=UTCDateTime())
    try:
        await migrate(db, "0018")
        async with db.write() as s:
            await s.execute(
                text("INSERT INTO discovery_rounds (id, phase, reason, watermark, findings, "
                     "started_at) VALUES (1, 'done', 'r', :mark, 2, :at)").bindparams(
                    bindparam("mark", type_=JSONType), at),
                {"mark": {}, "at": now},
            )  # fmt: skip
            for ordinal, feedback in ((1, WORDS), (2, None)):
                await s.execute(
                    text("INSERT INTO findings (id, round_id, ordinal, text, refs, status, "
                         "delivered_at, feedback, feedback_at, created_at) VALUES (:id, 1, "
                         ":ordinal, 'f', :refs, 'delivered', :at, :feedback, :at, :at)").bindparams(
                        bindparam("refs", type_=JSONType), at),
                    {"id": ordinal, "ordinal": ordinal, "refs": ["rec-1"], "feedback": feedback,
                     "at": now},
                )  # fmt: skip
        await migrate(db)
        async with db.read() as s:
            [moved] = (await s.scalars(select(FindingFeedback))).all()
            findings = (await s.scalars(select(Finding).order_by(Finding.id))).all()
        assert (moved.finding_id, moved.kind, moved.source, moved.text) == (1, "words", "words:1",
                                                                            WORDS)  # fmt: skip
        assert moved.created_at == now
        assert [(f.status, f.message_id) for f in findings] == [("delivered", None)] * 2

        async with db.engine.begin() as conn:
            await conn.run_sync(lambda c: command.downgrade(alembic_config(c), "0018"))
        async with db.read() as s:
            back = (await s.execute(text("SELECT feedback FROM findings ORDER BY id"))).all()
        assert [row[0] for row in back] == [WORDS, None]
    finally:
        await db.dispose()
