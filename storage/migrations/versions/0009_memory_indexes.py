"""memory indexes and their entries

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 08:35:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import storage.types

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "memory_indexes",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("criteria", sa.Text(), nullable=False),
        sa.Column(
            "scopes",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column(
            "conversation_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True
        ),
        sa.Column("created_by", sa.String(length=128), nullable=True),
        sa.Column(
            "session_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True
        ),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("paused", sa.Boolean(), nullable=False),
        sa.Column("covered_cursor", sa.BigInteger(), nullable=False),
        sa.Column("range_end", sa.BigInteger(), nullable=True),
        sa.Column("range_done", sa.BigInteger(), nullable=True),
        sa.Column("pending_count", sa.Integer(), nullable=True),
        sa.Column("interval_seconds", sa.Integer(), nullable=False),
        sa.Column("next_check_at", storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_checked_at", storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_organized_at", storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("last_error_at", storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("ready_notified", sa.Boolean(), nullable=False),
        sa.Column("created_at", storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("lease_owner", sa.String(length=128), nullable=True),
        sa.Column("lease_expires_at", storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_memory_indexes_conversation_id_conversations"),
        ),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.id"], name=op.f("fk_memory_indexes_session_id_sessions")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_memory_indexes")),
        sa.UniqueConstraint("name", name=op.f("uq_memory_indexes_name")),
    )
    with op.batch_alter_table("memory_indexes", schema=None) as batch_op:
        batch_op.create_index("ix_memory_indexes_due", ["paused", "next_check_at"], unique=False)

    op.create_table(
        "index_entries",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("index_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column(
            "refs",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("updated_at", storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["index_id"],
            ["memory_indexes.id"],
            name=op.f("fk_index_entries_index_id_memory_indexes"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_index_entries")),
        sa.UniqueConstraint("index_id", "key", name=op.f("uq_index_entries_index_id_key")),
    )
    with op.batch_alter_table("index_entries", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_index_entries_index_id"), ["index_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("index_entries", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_index_entries_index_id"))

    op.drop_table("index_entries")
    with op.batch_alter_table("memory_indexes", schema=None) as batch_op:
        batch_op.drop_index("ix_memory_indexes_due")

    op.drop_table("memory_indexes")
