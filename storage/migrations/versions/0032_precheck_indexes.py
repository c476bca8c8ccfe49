"""pre-check indexes: the discovery pre-check reads ends of indexes, not whole tables

Every due heartbeat reads the newest memory index entry change and the notes whose deadline
is near; both scanned their whole table (index entries grow with the history indexed).
The feedback signal became max(id) in the same change, served by the primary key.

Revision ID: 0032
Revises: 0031
Create Date: 2026-12-06 07:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0032"
down_revision: str | None = "0031"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_index_entries_updated_at", "index_entries", ["updated_at"])
    op.create_index("ix_notebook_notes_due_on", "notebook_notes", ["due_on"])


def downgrade() -> None:
    op.drop_index("ix_notebook_notes_due_on", table_name="notebook_notes")
    op.drop_index("ix_index_entries_updated_at", table_name="index_entries")
