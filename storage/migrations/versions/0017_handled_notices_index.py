"""the notices the Bot handled, newest first

The status page lists the newest notices the Bot handled (the `/why ID` of what it sent on
its own). Notices are few among the user messages, and nothing indexed them: each look read
the inbox's whole history, backwards, to find a handful. This partial index holds only them.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-05 03:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# As storage.models.HANDLED_NOTICE says it (a migration is frozen history: no app imports).
_HANDLED_NOTICE = (
    "kind != 'user_message' AND conversation_id IS NOT NULL AND delivered_at IS NOT NULL"
)


def upgrade() -> None:
    op.create_index(
        "ix_inbox_items_handled_notices",
        "inbox_items",
        ["id"],
        sqlite_where=sa.text(_HANDLED_NOTICE),
        postgresql_where=sa.text(_HANDLED_NOTICE),
    )


def downgrade() -> None:
    op.drop_index("ix_inbox_items_handled_notices", table_name="inbox_items")
