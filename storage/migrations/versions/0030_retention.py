"""retention: the last prune's record, and operations by age

`retention_state` holds one row per pruner (`name`): when it last ran, how many rows it
removed per table, the table sizes it measured and its error, so the status page shows them
without counting rows on every view. `ix_operations_created_at` lets the pruner find old
operations without reading every one.

Revision ID: 0030
Revises: 0029
Create Date: 2026-12-06 04:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import storage.types

revision: str = "0030"
down_revision: str | None = "0029"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TIME = storage.types.UTCDateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "retention_state",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("started_at", _TIME, nullable=False),
        sa.Column("finished_at", _TIME, nullable=False),
        sa.Column("deleted", storage.types.JSONType, nullable=False),
        sa.Column("sizes", storage.types.JSONType, nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_retention_state")),
    )
    op.create_index("ix_operations_created_at", "operations", ["created_at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_operations_created_at", table_name="operations")
    op.drop_table("retention_state")
