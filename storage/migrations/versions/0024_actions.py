"""actions: the ledger of proposed outward actions, and standing permissions

`actions` is one row per proposed outward action (a message sent as the bot, ...): proposed →
approved | rejected | expired → running → done | failed, who decided and when, the result
line, attempts, claimed with a lease by the action worker. `action_permissions` holds the
owner's standing `/allow KIND` (one chat, or everywhere).

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-06 01:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import storage.types

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_TIME = storage.types.UTCDateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "actions",
        sa.Column("id", _ID, nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("request_key", sa.String(length=200), nullable=True),
        sa.Column("params", storage.types.JSONType, nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("requester", sa.String(length=128), nullable=False),
        sa.Column("conversation_id", _ID, nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("decided_by", sa.String(length=128), nullable=True),
        sa.Column("decided_at", _TIME, nullable=True),
        sa.Column("permission_id", sa.BigInteger(), nullable=True),
        sa.Column("expires_at", _TIME, nullable=False),
        sa.Column("result", sa.Text(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", _TIME, nullable=True),
        sa.Column("created_at", _TIME, nullable=False),
        sa.Column("finished_at", _TIME, nullable=True),
        sa.Column("lease_owner", sa.String(length=128), nullable=True),
        sa.Column("lease_expires_at", _TIME, nullable=True),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_actions_conversation_id_conversations"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_actions")),
        sa.UniqueConstraint("request_key", name=op.f("uq_actions_request_key")),
    )
    op.create_index("ix_actions_due", "actions", ["state", "next_attempt_at"], unique=False)
    op.create_index("ix_actions_kind_created", "actions", ["kind", "created_at"], unique=False)
    op.create_table(
        "action_permissions",
        sa.Column("id", _ID, nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("conversation_id", _ID, nullable=True),
        sa.Column("granted_by", sa.String(length=128), nullable=False),
        sa.Column("created_at", _TIME, nullable=False),
        sa.Column("revoked_at", _TIME, nullable=True),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_action_permissions_conversation_id_conversations"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_action_permissions")),
    )


def downgrade() -> None:
    op.drop_table("action_permissions")
    op.drop_index("ix_actions_kind_created", table_name="actions")
    op.drop_index("ix_actions_due", table_name="actions")
    op.drop_table("actions")
