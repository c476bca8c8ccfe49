"""forget requests: the owner's `/forget` and `maka forget`, carried out in durable batches

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-06 04:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from storage.types import JSONType, UTCDateTime

_TIME = UTCDateTime(timezone=True)

revision: str = "0029"
down_revision: str | None = "0028"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "forget_requests",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True),
        sa.Column("selector", JSONType, nullable=False),
        sa.Column("requested_by", sa.String(128), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("cursor", sa.BigInteger(), nullable=False),
        sa.Column("removed", JSONType, nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("next_attempt_at", _TIME, nullable=True),
        sa.Column("created_at", _TIME, nullable=False),
        sa.Column("updated_at", _TIME, nullable=False),
        sa.Column("done_at", _TIME, nullable=True),
        sa.Column("lease_owner", sa.String(128), nullable=True),
        sa.Column("lease_expires_at", _TIME, nullable=True),
    )
    op.create_index("ix_forget_requests_due", "forget_requests", ["status", "next_attempt_at"])


def downgrade() -> None:
    op.drop_index("ix_forget_requests_due", "forget_requests")
    op.drop_table("forget_requests")
