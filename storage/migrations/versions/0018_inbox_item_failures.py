"""inbox items that fail: attempts, backoff and parking

A Bot turn that fails used to leave its batch undelivered and its conversation ready again at
once: one message that always failed was retried as fast as the process could, and every
later message in that chat waited behind it. An item now counts its failed turns, waits
`retry_at` before it is tried again (on its own), and after a few is parked: marked
delivered, with `parked_at` and its `last_error` kept for /status and the owner.

The Bot's claim asks of every waiting item whether it waits out a backoff, so `retry_at`
joins the two indexes of waiting items (each read answered from the index alone, as before);
the items in backoff, almost always none, get an index of their own (when the first is due).

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-05 12:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import storage.types

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TIME = storage.types.UTCDateTime(timezone=True)
_PARKED = "parked_at IS NOT NULL"
_CONVERSATION = "delivered_at IS NULL AND conversation_id IS NOT NULL"
_RETRYING = "delivered_at IS NULL AND retry_at IS NOT NULL"
_WAITING = {  # name -> columns before (0013, 0015) and now
    "ix_inbox_items_waiting": (
        ["conversation_id", "id", "created_at", "delivered_at"],
        ["conversation_id", "id", "created_at", "delivered_at", "retry_at"],
    ),
    "ix_inbox_items_waiting_order": (
        ["id", "conversation_id", "created_at"],
        ["id", "conversation_id", "created_at", "retry_at"],
    ),
}


def _partial(name: str, columns: list[str], where: str) -> None:
    op.create_index(
        name,
        "inbox_items",
        columns,
        sqlite_where=sa.text(where),
        postgresql_where=sa.text(where),
    )


def upgrade() -> None:
    with op.batch_alter_table("inbox_items") as batch:
        batch.add_column(sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("last_error", sa.Text(), nullable=True))
        batch.add_column(sa.Column("retry_at", _TIME, nullable=True))
        batch.add_column(sa.Column("parked_at", _TIME, nullable=True))
    for name, (_, columns) in _WAITING.items():
        op.drop_index(name, table_name="inbox_items")
        _partial(name, columns, _CONVERSATION)
    _partial("ix_inbox_items_retrying", ["retry_at", "conversation_id"], _RETRYING)
    _partial("ix_inbox_items_parked", ["id"], _PARKED)


def downgrade() -> None:
    op.drop_index("ix_inbox_items_parked", table_name="inbox_items")
    op.drop_index("ix_inbox_items_retrying", table_name="inbox_items")
    for name, (columns, _) in _WAITING.items():
        op.drop_index(name, table_name="inbox_items")
        _partial(name, columns, _CONVERSATION)
    with op.batch_alter_table("inbox_items") as batch:
        batch.drop_column("parked_at")
        batch.drop_column("retry_at")
        batch.drop_column("last_error")
        batch.drop_column("attempts")
