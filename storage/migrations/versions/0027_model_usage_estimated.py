"""model calls say whether their token counts are estimated (issue #42)

An endpoint that reports no usage (local servers, some streams) has its calls counted with
the one tokenizer's estimate; `usage_estimated` marks those rows so totals can say "est.".

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-06 04:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0027"
down_revision: str | None = "0026"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("model_calls") as batch_op:
        batch_op.add_column(
            sa.Column("usage_estimated", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("model_calls") as batch_op:
        batch_op.drop_column("usage_estimated")
