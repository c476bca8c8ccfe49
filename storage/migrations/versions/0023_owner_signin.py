"""owner sign-in: the owner's Feishu user token (issue #41)

`owner_signin_states` holds each pending `/signin`'s OAuth `state`, hashed, bound to the
owner's open_id, single use and short-lived. `owner_tokens` holds the owner's tokens sealed
with MAKA_SECRET_KEY (AES-GCM), their expiries in the clear for scheduling the refresh, and
whether the sign-in is red ("sign in again").

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-06 01:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import storage.types

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TIME = storage.types.UTCDateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "owner_signin_states",
        sa.Column("state_hash", sa.String(length=64), nullable=False),
        sa.Column("open_id", sa.String(length=128), nullable=False),
        sa.Column("created_at", _TIME, nullable=False),
        sa.Column("expires_at", _TIME, nullable=False),
        sa.Column("used_at", _TIME, nullable=True),
        sa.PrimaryKeyConstraint("state_hash", name=op.f("pk_owner_signin_states")),
    )
    op.create_table(
        "owner_tokens",
        sa.Column("name", sa.String(length=32), nullable=False),
        sa.Column("sealed", sa.LargeBinary(), nullable=False),
        sa.Column("access_expires_at", _TIME, nullable=False),
        sa.Column("refresh_expires_at", _TIME, nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("retry_at", _TIME, nullable=True),
        sa.Column("signed_in_at", _TIME, nullable=False),
        sa.Column("updated_at", _TIME, nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_owner_tokens")),
    )


def downgrade() -> None:
    op.drop_table("owner_tokens")
    op.drop_table("owner_signin_states")
