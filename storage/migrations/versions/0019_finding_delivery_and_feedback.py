"""a finding is delivered when its message is sent; feedback is tied to that message

`findings.message_id`: the platform id of the Bot's message that told the finding (set when
its outbox row is sent). `finding_feedback`: the owner's reply or quote of that message, a
reaction on it (later a button), once per source; it replaces `findings.feedback`, which held
the owner's next words in the DM whatever they were about (kept here as kind `words`).
`message_reactions`: reactions added to messages, once per event.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-05 12:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import storage.types

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


# No batch mode for `findings`: on SQLite it copies the table and drops the old one, which
# the foreign keys of `finding_feedback` rows refuse. Adding and dropping a plain column is
# native on both databases (SQLite since 3.35).


def upgrade() -> None:
    op.add_column("findings", sa.Column("message_id", sa.String(length=128), nullable=True))
    op.create_table(
        "finding_feedback",
        sa.Column("id", _ID, nullable=False),
        sa.Column("finding_id", _ID, nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("source", sa.String(length=200), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("created_at", storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["finding_id"], ["findings.id"], name=op.f("fk_finding_feedback_finding_id_findings")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_finding_feedback")),
        sa.UniqueConstraint(
            "finding_id", "source", name=op.f("uq_finding_feedback_finding_id_source")
        ),
    )
    op.create_table(
        "message_reactions",
        sa.Column("id", _ID, nullable=False),
        sa.Column("platform", sa.String(length=16), nullable=False),
        sa.Column("event_id", sa.String(length=128), nullable=False),
        sa.Column("message_id", sa.String(length=128), nullable=False),
        sa.Column("operator_id", sa.String(length=128), nullable=True),
        sa.Column("emoji", sa.String(length=64), nullable=False),
        sa.Column("created_at", storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("received_at", storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_message_reactions")),
        sa.UniqueConstraint(
            "platform", "event_id", name=op.f("uq_message_reactions_platform_event_id")
        ),
    )
    op.create_index(
        "ix_message_reactions_message", "message_reactions", ["platform", "message_id"]
    )
    op.execute(
        "INSERT INTO finding_feedback (finding_id, kind, source, text, created_at) "
        "SELECT id, 'words', 'words:' || CAST(id AS VARCHAR(20)), feedback, "
        "COALESCE(feedback_at, created_at) FROM findings WHERE feedback IS NOT NULL"
    )
    op.drop_column("findings", "feedback")
    op.drop_column("findings", "feedback_at")


def downgrade() -> None:
    op.add_column("findings", sa.Column("feedback", sa.Text(), nullable=True))
    op.add_column(
        "findings",
        sa.Column("feedback_at", storage.types.UTCDateTime(timezone=True), nullable=True),
    )
    op.execute(
        "UPDATE findings SET feedback = (SELECT MIN(f.text) FROM finding_feedback f "
        "WHERE f.finding_id = findings.id), feedback_at = (SELECT MIN(f.created_at) "
        "FROM finding_feedback f WHERE f.finding_id = findings.id)"
    )
    op.drop_index("ix_message_reactions_message", table_name="message_reactions")
    op.drop_table("message_reactions")
    op.drop_table("finding_feedback")
    op.drop_column("findings", "message_id")
