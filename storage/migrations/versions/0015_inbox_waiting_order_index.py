"""the waiting inbox items in arrival order

The Bot's claim asks which conversations are ready, oldest input first. It grouped every
waiting item by conversation to answer, so each claim cost as much as the backlog was long
(half the Bot's database time with a thousand conversations waiting). It now walks the
conversations' first waiting items in arrival order and stops at the ready ones it needs:
that walk needs the waiting items indexed by id.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02 22:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_CONVERSATION = "delivered_at IS NULL AND conversation_id IS NOT NULL"


def upgrade() -> None:
    op.create_index(
        "ix_inbox_items_waiting_order",
        "inbox_items",
        ["id", "conversation_id", "created_at"],
        sqlite_where=sa.text(_CONVERSATION),
        postgresql_where=sa.text(_CONVERSATION),
    )


def downgrade() -> None:
    op.drop_index("ix_inbox_items_waiting_order", table_name="inbox_items")
