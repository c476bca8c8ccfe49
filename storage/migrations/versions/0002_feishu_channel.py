"""feishu channel

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 01:12:33.023450
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "api_usage",
        sa.Column("platform", sa.String(length=16), nullable=False),
        sa.Column("api", sa.String(length=64), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("calls", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("platform", "api", "day", name=op.f("pk_api_usage")),
    )
    with op.batch_alter_table("conversations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("peer_open_id", sa.String(length=128), nullable=True))
        batch_op.create_index(
            batch_op.f("ix_conversations_peer_open_id"), ["peer_open_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("conversations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_conversations_peer_open_id"))
        batch_op.drop_column("peer_open_id")

    op.drop_table("api_usage")
