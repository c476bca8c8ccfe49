"""matters

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30 02:11:39.971075
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import storage.types

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "matters",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column(
            "session_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column(
            "conversation_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True
        ),
        sa.Column("requested_by", sa.String(length=128), nullable=True),
        sa.Column("objective", sa.Text(), nullable=False),
        sa.Column(
            "amendments",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("state_text", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column(
            "wakes",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("next_wake_at", storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("waiting_for", sa.Text(), nullable=True),
        sa.Column(
            "work_record",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("run_count", sa.Integer(), nullable=False),
        sa.Column("rejection_count", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("running_since", storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("lease_owner", sa.String(length=128), nullable=True),
        sa.Column("lease_expires_at", storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_matters_conversation_id_conversations"),
        ),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.id"], name=op.f("fk_matters_session_id_sessions")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_matters")),
        sa.UniqueConstraint("session_id", name=op.f("uq_matters_session_id")),
    )
    with op.batch_alter_table("matters", schema=None) as batch_op:
        batch_op.create_index("ix_matters_status_wake", ["status", "next_wake_at"], unique=False)

    op.create_table(
        "matter_settles",
        sa.Column("operation_id", sa.String(length=200), nullable=False),
        sa.Column(
            "matter_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column(
            "outcome",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("created_at", storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["matter_id"], ["matters.id"], name=op.f("fk_matter_settles_matter_id_matters")
        ),
        sa.PrimaryKeyConstraint("operation_id", name=op.f("pk_matter_settles")),
    )


def downgrade() -> None:
    op.drop_table("matter_settles")
    with op.batch_alter_table("matters", schema=None) as batch_op:
        batch_op.drop_index("ix_matters_status_wake")

    op.drop_table("matters")
