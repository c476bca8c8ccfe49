"""progress cards: one per Bot turn or Matter, pushed to the chat through Feishu CardKit

`progress_cards` holds a card's desired state (title, steps, status, version), written by the
Bot's turn and the Matters, and what its platform's worker pushed (card and message ids,
the CardKit sequence, the version shown, streaming closed), claimed with a lease.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-05 17:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import storage.types

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_TIME = storage.types.UTCDateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "progress_cards",
        sa.Column("id", _ID, nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("platform", sa.String(length=16), nullable=False),
        sa.Column("chat_id", sa.String(length=128), nullable=False),
        sa.Column("conversation_id", _ID, nullable=True),
        sa.Column("reply_to", sa.String(length=128), nullable=True),
        sa.Column("inbox_item_id", sa.BigInteger(), nullable=True),
        sa.Column("matter_id", sa.BigInteger(), nullable=True),
        sa.Column("title", sa.String(length=256), nullable=False),
        sa.Column("steps", storage.types.JSONType, nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("card_id", sa.String(length=128), nullable=True),
        sa.Column("message_id", sa.String(length=128), nullable=True),
        sa.Column("element_id", sa.String(length=64), nullable=True),
        sa.Column("sequence", sa.Integer(), nullable=False),
        sa.Column("pushed_version", sa.Integer(), nullable=False),
        sa.Column("streaming_closed", sa.Boolean(), nullable=False),
        sa.Column("streaming_since", _TIME, nullable=True),
        sa.Column("pushed_at", _TIME, nullable=True),
        sa.Column("pushes", sa.Integer(), nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("gave_up_at", _TIME, nullable=True),
        sa.Column("next_attempt_at", _TIME, nullable=True),
        sa.Column("created_at", _TIME, nullable=False),
        sa.Column("updated_at", _TIME, nullable=False),
        sa.Column("lease_owner", sa.String(length=128), nullable=True),
        sa.Column("lease_expires_at", _TIME, nullable=True),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_progress_cards_conversation_id_conversations"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_progress_cards")),
        sa.UniqueConstraint("key", name=op.f("uq_progress_cards_key")),
    )
    op.create_index(
        "ix_progress_cards_due", "progress_cards", ["platform", "next_attempt_at"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_progress_cards_due", table_name="progress_cards")
    op.drop_table("progress_cards")
