"""partial indexes over the inbox items still waiting

"Which conversations have undelivered input, oldest first?" is asked on every Bot claim, and
the Matters worker asks the same of sessions. Through `ix_inbox_items_conversation_pending`
both walked every item ever delivered (SQLite searched `conversation_id > ?`): the cost of a
claim grew with the inbox's whole history. These hold only the waiting items.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02 13:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_CONVERSATION = "delivered_at IS NULL AND conversation_id IS NOT NULL"
_SESSION = "delivered_at IS NULL AND session_id IS NOT NULL"


def upgrade() -> None:
    op.create_index(
        "ix_inbox_items_waiting",
        "inbox_items",
        ["conversation_id", "id", "created_at", "delivered_at"],
        sqlite_where=sa.text(_CONVERSATION),
        postgresql_where=sa.text(_CONVERSATION),
    )
    op.create_index(
        "ix_inbox_items_session_waiting",
        "inbox_items",
        ["session_id", "delivered_at"],
        sqlite_where=sa.text(_SESSION),
        postgresql_where=sa.text(_SESSION),
    )


def downgrade() -> None:
    op.drop_index("ix_inbox_items_session_waiting", table_name="inbox_items")
    op.drop_index("ix_inbox_items_waiting", table_name="inbox_items")
