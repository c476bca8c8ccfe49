"""conversations point at their coordination Session

Every Bot turn looked its conversation's coordination Session up by (conversation_id, role),
a scan of `sessions` (no index there), growing with every conversation ever seen. The
conversation now says which it is (`coordination_session_id`, a column the first schema had
and nothing wrote), read with the conversation itself; the Bot sets it when it makes the
Session. This fills it in for the Sessions made before.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02 19:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute(
        sa.text(
            "UPDATE conversations SET coordination_session_id = ("
            " SELECT min(sessions.id) FROM sessions"
            " WHERE sessions.conversation_id = conversations.id"
            " AND sessions.role = 'coordination')"
            " WHERE coordination_session_id IS NULL"
        )
    )


def downgrade() -> None:
    pass  # the pointer is harmless to an older version, which never reads it
