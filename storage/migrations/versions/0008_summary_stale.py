"""session summaries can be marked stale (a request on another topic)

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 07:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("session_summaries") as batch_op:
        batch_op.add_column(
            sa.Column("stale", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("session_summaries") as batch_op:
        batch_op.drop_column("stale")
