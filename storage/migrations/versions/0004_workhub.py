"""workhub

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 01:45:43.596162
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import storage.types

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "session_completions",
        sa.Column(
            "session_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("completion_key", sa.String(length=200), nullable=False),
        sa.Column("created_at", storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.id"], name=op.f("fk_session_completions_session_id_sessions")
        ),
        sa.PrimaryKeyConstraint(
            "session_id", "completion_key", name=op.f("pk_session_completions")
        ),
    )
    op.create_table(
        "session_summaries",
        sa.Column(
            "session_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("covered_seq", sa.Integer(), nullable=False),
        sa.Column("completion_count", sa.Integer(), nullable=False),
        sa.Column("requested_at_count", sa.Integer(), nullable=False),
        sa.Column("summarized_at_count", sa.Integer(), nullable=False),
        sa.Column("generated_at", storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("lease_owner", sa.String(length=128), nullable=True),
        sa.Column("lease_expires_at", storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.id"], name=op.f("fk_session_summaries_session_id_sessions")
        ),
        sa.PrimaryKeyConstraint("session_id", name=op.f("pk_session_summaries")),
    )
    op.create_table(
        "workhub_actions",
        sa.Column("action_id", sa.String(length=200), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column(
            "target_session_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True
        ),
        sa.Column(
            "outcome",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("created_at", storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["target_session_id"],
            ["sessions.id"],
            name=op.f("fk_workhub_actions_target_session_id_sessions"),
        ),
        sa.PrimaryKeyConstraint("action_id", name=op.f("pk_workhub_actions")),
    )


def downgrade() -> None:
    op.drop_table("workhub_actions")
    op.drop_table("session_summaries")
    op.drop_table("session_completions")
