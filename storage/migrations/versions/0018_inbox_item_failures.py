"""inbox items that fail: attempts, backoff and parking

A Bot turn that fails used to leave its batch undelivered and its conversation ready again at
once: one message that always failed was retried as fast as the process could, and every
later message in that chat waited behind it. An item now counts its failed turns, waits
`retry_at` before it is tried again (on its own), and after a few is parked: marked
delivered, with `parked_at` and its `last_error` kept for /status and the owner.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-05 12:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import storage.types

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_PARKED = "parked_at IS NOT NULL"
_TIME = storage.types.UTCDateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("inbox_items") as batch:
        batch.add_column(sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("last_error", sa.Text(), nullable=True))
        batch.add_column(sa.Column("retry_at", _TIME, nullable=True))
        batch.add_column(sa.Column("parked_at", _TIME, nullable=True))
    op.create_index(
        "ix_inbox_items_parked",
        "inbox_items",
        ["id"],
        sqlite_where=sa.text(_PARKED),
        postgresql_where=sa.text(_PARKED),
    )


def downgrade() -> None:
    op.drop_index("ix_inbox_items_parked", table_name="inbox_items")
    with op.batch_alter_table("inbox_items") as batch:
        batch.drop_column("parked_at")
        batch.drop_column("retry_at")
        batch.drop_column("last_error")
        batch.drop_column("attempts")
