"""PostgreSQL wakes the replicas itself when work is inserted

A write that made work for another replica (a message into the inbox, a reply into the
outbox, a record or a Session event to index) also ran `SELECT pg_notify(…)`, a statement of
its own: a round trip in every ingest batch and in half of the Bot's grouped writes. A
statement-level trigger on each of those tables now sends the wake-up at the same commit,
with no statement of ours. The payload is "<topic>@<mark>", the mark being the writing
process's (the part of its connections' application_name after "@"), so a replica still
skips the notifications its own writes caused (it has woken its own workers already).
SQLite has one process and no triggers of this kind: nothing to do there.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-03 15:40:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# table -> topic; bot/host/notify.py's WOKEN_BY_INSERT says the same
TOPICS = {
    "inbox_items": "inbox",
    "outbox": "outbox",
    "source_records": "source-index",
    "session_events": "session-index",
}

_FUNCTION = """
CREATE FUNCTION maka_wake() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify(
        'maka_wake',
        TG_ARGV[0] || '@' || split_part(current_setting('application_name'), '@', 2)
    );
    RETURN NULL;
END
$$
"""


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(_FUNCTION)
    for table, topic in TOPICS.items():
        op.execute(
            f"CREATE TRIGGER maka_wake_{table} AFTER INSERT ON {table}"
            f" FOR EACH STATEMENT EXECUTE FUNCTION maka_wake('{topic}')"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in TOPICS:
        op.execute(f"DROP TRIGGER maka_wake_{table} ON {table}")
    op.execute("DROP FUNCTION maka_wake()")
