"""source shares: sources the owner shared with a conversation

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 06:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import storage.types

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "source_shares",
        sa.Column("source", sa.String(length=200), nullable=False),
        sa.Column(
            "conversation_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=False,
        ),
        sa.Column("shared_by", sa.String(length=128), nullable=False),
        sa.Column("created_at", storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_source_shares_conversation_id_conversations"),
        ),
        sa.PrimaryKeyConstraint("source", "conversation_id", name=op.f("pk_source_shares")),
    )
    op.create_index(
        op.f("ix_source_shares_conversation_id"),
        "source_shares",
        ["conversation_id"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_source_shares_conversation_id"), table_name="source_shares")
    op.drop_table("source_shares")
