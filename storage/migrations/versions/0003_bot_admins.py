"""bot admins

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 01:30:50.428292
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import storage.types

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "admins",
        sa.Column("open_id", sa.String(length=128), nullable=False),
        sa.Column("added_by", sa.String(length=128), nullable=False),
        sa.Column("added_at", storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("open_id", name=op.f("pk_admins")),
    )


def downgrade() -> None:
    op.drop_table("admins")
