"""discovery heartbeat, rounds, notebook and findings

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01 21:41:19.030329
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import storage.types

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:

    op.create_table(
        "discovery_rounds",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("phase", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column(
            "watermark",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("findings", sa.Integer(), nullable=False),
        sa.Column("started_at", storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("finished_at", storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_discovery_rounds")),
    )
    with op.batch_alter_table("discovery_rounds", schema=None) as batch_op:
        batch_op.create_index("ix_discovery_rounds_phase", ["phase", "started_at"], unique=False)

    op.create_table(
        "findings",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("round_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column(
            "refs",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("repeat_of", sa.BigInteger(), nullable=True),
        sa.Column("delivered_at", storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("feedback", sa.Text(), nullable=True),
        sa.Column("feedback_at", storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["round_id"],
            ["discovery_rounds.id"],
            name=op.f("fk_findings_round_id_discovery_rounds"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_findings")),
        sa.UniqueConstraint("round_id", "ordinal", name=op.f("uq_findings_round_id_ordinal")),
    )
    op.create_table(
        "notebook_notes",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("round_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=True),
        sa.Column("author", sa.String(length=16), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column(
            "refs",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("due_on", sa.Date(), nullable=True),
        sa.Column("created_at", storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["round_id"],
            ["discovery_rounds.id"],
            name=op.f("fk_notebook_notes_round_id_discovery_rounds"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_notebook_notes")),
    )
    op.create_table(
        "discovery_state",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("interval_seconds", sa.Integer(), nullable=False),
        sa.Column("quiet_from", sa.Integer(), nullable=True),
        sa.Column("quiet_to", sa.Integer(), nullable=True),
        sa.Column("budget_tokens", sa.Integer(), nullable=False),
        sa.Column("deep_every_seconds", sa.Integer(), nullable=False),
        sa.Column("run_requested", sa.Boolean(), nullable=False),
        sa.Column("next_round_at", storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_round_at", storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column(
            "watermark",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "discovery_session_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=True,
        ),
        sa.Column(
            "judgement_session_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            nullable=True,
        ),
        sa.Column("updated_at", storage.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("lease_owner", sa.String(length=128), nullable=True),
        sa.Column("lease_expires_at", storage.types.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["discovery_session_id"],
            ["sessions.id"],
            name=op.f("fk_discovery_state_discovery_session_id_sessions"),
        ),
        sa.ForeignKeyConstraint(
            ["judgement_session_id"],
            ["sessions.id"],
            name=op.f("fk_discovery_state_judgement_session_id_sessions"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_discovery_state")),
    )


def downgrade() -> None:

    op.drop_table("discovery_state")
    op.drop_table("notebook_notes")
    op.drop_table("findings")
    with op.batch_alter_table("discovery_rounds", schema=None) as batch_op:
        batch_op.drop_index("ix_discovery_rounds_phase")

    op.drop_table("discovery_rounds")
