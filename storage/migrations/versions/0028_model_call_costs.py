"""model call costs: which calls the fallback model answered, and for which conversation

`model_calls.fallback` marks a call sent to MAKA_MODEL_FALLBACK_* after the primary model
failed; `model_calls.conversation_id` is the conversation a Bot turn's call was made for
(the status page's top conversations by cost). Both are for new calls only.

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-06 04:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0028"
down_revision: str | None = "0027"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("model_calls") as batch:
        batch.add_column(
            sa.Column("fallback", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
        batch.add_column(
            sa.Column(
                "conversation_id",
                sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
                nullable=True,
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("model_calls") as batch:
        batch.drop_column("conversation_id")
        batch.drop_column("fallback")
