"""one operations table for idempotent writes (Matters' settles, WorkHub's routing writes)

Rows of matter_settles and workhub_actions move into it, then both tables go; downgrade moves
them back.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02 03:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import storage.types

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def _timestamp(name: str) -> sa.Column[object]:
    return sa.Column(name, storage.types.UTCDateTime(timezone=True), nullable=False)


def upgrade() -> None:
    op.create_table(
        "operations",
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("subject_id", BIG_ID, nullable=True),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("outcome", JSON, nullable=False),
        _timestamp("created_at"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_operations")),
    )
    with op.batch_alter_table("operations", schema=None) as batch_op:
        batch_op.create_index(
            "ix_operations_kind_subject", ["kind", "subject_id", "created_at"], unique=False
        )
    op.execute(
        "INSERT INTO operations (id, kind, subject_id, fingerprint, outcome, created_at)"
        " SELECT operation_id, 'settle', matter_id, fingerprint, outcome, created_at"
        " FROM matter_settles"
    )
    op.execute(
        "INSERT INTO operations (id, kind, subject_id, fingerprint, outcome, created_at)"
        " SELECT action_id, kind, target_session_id, fingerprint, outcome, created_at"
        " FROM workhub_actions"
    )
    op.drop_table("matter_settles")
    op.drop_table("workhub_actions")


def downgrade() -> None:
    op.create_table(
        "workhub_actions",
        sa.Column("action_id", sa.String(length=200), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("target_session_id", BIG_ID, nullable=True),
        sa.Column("outcome", JSON, nullable=False),
        _timestamp("created_at"),
        sa.ForeignKeyConstraint(
            ["target_session_id"],
            ["sessions.id"],
            name=op.f("fk_workhub_actions_target_session_id_sessions"),
        ),
        sa.PrimaryKeyConstraint("action_id", name=op.f("pk_workhub_actions")),
    )
    op.create_table(
        "matter_settles",
        sa.Column("operation_id", sa.String(length=200), nullable=False),
        sa.Column("matter_id", BIG_ID, nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("outcome", JSON, nullable=False),
        _timestamp("created_at"),
        sa.ForeignKeyConstraint(
            ["matter_id"], ["matters.id"], name=op.f("fk_matter_settles_matter_id_matters")
        ),
        sa.PrimaryKeyConstraint("operation_id", name=op.f("pk_matter_settles")),
    )
    op.execute(
        "INSERT INTO matter_settles (operation_id, matter_id, fingerprint, outcome, created_at)"
        " SELECT id, subject_id, fingerprint, outcome, created_at FROM operations"
        " WHERE kind = 'settle'"
    )
    op.execute(
        "INSERT INTO workhub_actions"
        " (action_id, fingerprint, kind, target_session_id, outcome, created_at)"
        " SELECT id, fingerprint, kind, subject_id, outcome, created_at FROM operations"
        " WHERE kind <> 'settle'"
    )
    op.drop_table("operations")
