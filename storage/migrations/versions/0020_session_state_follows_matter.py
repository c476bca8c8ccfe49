"""task Sessions' state follows their Matter

`sessions.state` was always 'active', so finished tasks read as active to routing. Now a task
Session's state follows its Matter's status (storage.repos.matters.SESSION_STATE): active,
waiting, blocked (paused), done (completed), cancelled. Existing rows get the state their
Matter says; Sessions without a Matter stay as they are.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-05 12:40:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# As storage.repos.matters.SESSION_STATE says it (a migration is frozen history).
_STATE_OF_STATUS = {
    "active": "active",
    "waiting": "waiting",
    "paused": "blocked",
    "completed": "done",
    "cancelled": "cancelled",
}


def upgrade() -> None:
    cases = " ".join(f"WHEN '{old}' THEN '{new}'" for old, new in _STATE_OF_STATUS.items())
    op.execute(
        "UPDATE sessions SET state = ("
        f"SELECT CASE matters.status {cases} ELSE sessions.state END "
        "FROM matters WHERE matters.session_id = sessions.id"
        ") WHERE EXISTS (SELECT 1 FROM matters WHERE matters.session_id = sessions.id)"
    )


def downgrade() -> None:
    op.execute(
        "UPDATE sessions SET state = 'active' "
        "WHERE state IN ('waiting', 'blocked', 'done', 'cancelled')"
    )
