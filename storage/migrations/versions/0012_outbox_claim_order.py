"""outbox indexes for claiming a chat's rows in order

`ix_outbox_chat_state` answers "is an earlier row of this chat still pending?", asked of every
candidate a sender claims; `ix_outbox_state_due` gains `id`, the claim's order's tie-breaker,
so a claim walks the index and stops at the first free row instead of sorting every pending
one (both were quadratic in a backlog).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02 06:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_outbox_chat_state", "outbox", ["platform", "chat_id", "state", "id"])
    op.drop_index("ix_outbox_state_due", table_name="outbox")
    op.create_index("ix_outbox_state_due", "outbox", ["state", "next_attempt_at", "id"])


def downgrade() -> None:
    op.drop_index("ix_outbox_state_due", table_name="outbox")
    op.create_index("ix_outbox_state_due", "outbox", ["state", "next_attempt_at"])
    op.drop_index("ix_outbox_chat_state", table_name="outbox")
