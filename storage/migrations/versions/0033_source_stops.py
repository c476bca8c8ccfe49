"""source stops: a source the owner forgot stops syncing

`sources.stopped_at` / `stopped_by` mark a source whose syncing a whole-source or whole-chat
forget stopped (`stopped_by` says which: `forget #N`). No sync path asks for or runs a
stopped source until the owner turns it back on (`/sync resume`).

Revision ID: 0033
Revises: 0032
Create Date: 2026-12-06 06:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import storage.types

revision: str = "0033"
down_revision: str | None = "0032"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("sources") as batch_op:
        batch_op.add_column(
            sa.Column("stopped_at", storage.types.UTCDateTime(timezone=True), nullable=True)
        )
        batch_op.add_column(sa.Column("stopped_by", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("sources") as batch_op:
        batch_op.drop_column("stopped_by")
        batch_op.drop_column("stopped_at")
