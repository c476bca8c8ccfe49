"""owner chats: the owner's chats chosen to be read as the owner (issue #41)

`owner_chats` is one row per chat the owner chose with `/sync chats add` (a group the bot is
not in, or a direct message by its chat id): the `chats` source reads exactly these.

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-06 03:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import storage.types

revision: str = "0026"
down_revision: str | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TIME = storage.types.UTCDateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "owner_chats",
        sa.Column("chat_id", sa.String(length=128), nullable=False),
        sa.Column("title", sa.String(length=256), nullable=True),
        sa.Column("chat_type", sa.String(length=16), nullable=False),
        sa.Column("chosen_by", sa.String(length=128), nullable=False),
        sa.Column("chosen_at", _TIME, nullable=False),
        sa.PrimaryKeyConstraint("chat_id", name=op.f("pk_owner_chats")),
    )


def downgrade() -> None:
    op.drop_table("owner_chats")
