"""flat reads: per-source record counts kept by triggers; an index for Sessions by activity

`/sync status` and the status page counted every source record on each view
(`GROUP BY source` over the whole table); `source_record_counts` now holds each source's
count, kept in the writing transaction by triggers on `source_records` so that no write
path (ingest, sync, forwards, attachments, tombstones) can forget it. SQLite, one writer at
a time, updates the count row by row. On PostgreSQL a counter row updated by every writer
would make concurrent writers of one chat wait for each other's commit, so its
statement-level triggers only append a statement's change per source to
`source_record_count_changes` (insert-only: nobody waits), and the record-counts worker
folds those into the counts (storage.repos.source_records.fold_record_counts).

WorkHub sorted every task Session by its last activity to take a page; a partial
expression index over exactly the candidates' filter and order serves the ORDER BY ...
LIMIT (and one per conversation for a chat's own Sessions).

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-06 04:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0031"
down_revision: str | None = "0030"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ACTIVITY = "coalesce(last_message_at, status_updated_at, created_at)"

_PG_STATEMENTS = (
    """
CREATE FUNCTION maka_count_records_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO source_record_count_changes (source, change)
    SELECT source, count(*) FROM added_rows GROUP BY source;
    RETURN NULL;
END $$
""",
    """
CREATE FUNCTION maka_count_records_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO source_record_count_changes (source, change)
    SELECT source, -count(*) FROM removed_rows GROUP BY source;
    RETURN NULL;
END $$
""",
    """
CREATE TRIGGER maka_count_records_added AFTER INSERT ON source_records
    REFERENCING NEW TABLE AS added_rows
    FOR EACH STATEMENT EXECUTE FUNCTION maka_count_records_added()
""",
    """
CREATE TRIGGER maka_count_records_removed AFTER DELETE ON source_records
    REFERENCING OLD TABLE AS removed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION maka_count_records_removed()
""",
)

_SQLITE_TRIGGERS = (
    """
CREATE TRIGGER maka_count_records_added AFTER INSERT ON source_records BEGIN
    INSERT INTO source_record_counts (source, records) VALUES (NEW.source, 1)
    ON CONFLICT (source) DO UPDATE SET records = records + 1;
END
""",
    """
CREATE TRIGGER maka_count_records_removed AFTER DELETE ON source_records BEGIN
    UPDATE source_record_counts SET records = records - 1 WHERE source = OLD.source;
END
""",
)


def upgrade() -> None:
    op.create_table(
        "source_record_counts",
        sa.Column("source", sa.String(200), primary_key=True),
        sa.Column("records", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "source_record_count_changes",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("source", sa.String(200), nullable=False),
        sa.Column("change", sa.BigInteger(), nullable=False),
    )
    op.execute(
        "INSERT INTO source_record_counts (source, records)"
        " SELECT source, count(*) FROM source_records GROUP BY source"
    )
    postgres = op.get_bind().dialect.name == "postgresql"
    for statement in _PG_STATEMENTS if postgres else _SQLITE_TRIGGERS:
        op.execute(statement)
    candidates = "is_archived = false AND role IS NULL AND subagent_parent IS NULL"
    op.execute(
        f"CREATE INDEX ix_sessions_candidates_by_activity ON sessions"
        f" ({_ACTIVITY} DESC, id) WHERE {candidates}"
    )
    op.execute(
        f"CREATE INDEX ix_sessions_conversation_candidates_by_activity ON sessions"
        f" (conversation_id, {_ACTIVITY} DESC, id) WHERE {candidates}"
    )


def downgrade() -> None:
    op.execute("DROP INDEX ix_sessions_conversation_candidates_by_activity")
    op.execute("DROP INDEX ix_sessions_candidates_by_activity")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER maka_count_records_removed ON source_records")
        op.execute("DROP TRIGGER maka_count_records_added ON source_records")
        op.execute("DROP FUNCTION maka_count_records_removed()")
        op.execute("DROP FUNCTION maka_count_records_added()")
    else:
        op.execute("DROP TRIGGER maka_count_records_removed")
        op.execute("DROP TRIGGER maka_count_records_added")
    op.drop_table("source_record_count_changes")
    op.drop_table("source_record_counts")
