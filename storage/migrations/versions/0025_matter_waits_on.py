"""matter waits on: an owner's calendar event or Feishu task a waiting Matter waits for

`matters.waits_on` holds the target (`{"kind": "event_start" | "event_end" | "task_completed",
"item": <event id | task guid>, "title": ..., "at": <the event's time, ISO 8601> }`, and once
it is met or gone, its `outcome` line); null for a Matter that waits only for time.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-06 03:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import storage.types

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("matters") as batch:
        batch.add_column(sa.Column("waits_on", storage.types.JSONType, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("matters") as batch:
        batch.drop_column("waits_on")
