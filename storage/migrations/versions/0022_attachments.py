"""attachments: the files, images and voice notes messages and mails carry

`attachment_blobs` holds each distinct content once (by SHA-256) with its extraction (kind,
text, detail, error), so the same file sent twice is fetched twice but read once.
`attachments` is one row per resource of a message (a Feishu image_key / file_key, a mail
part): a work item moving `fetch` → `extract` → `done` | `failed`, backed off and `parked`
after repeated transient failures, `recalled` when its message is; claimed with a lease.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-06 00:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import storage.types

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_TIME = storage.types.UTCDateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "attachment_blobs",
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=True),
        sa.Column("text", sa.Text(), nullable=True),
        sa.Column("detail", sa.String(length=256), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("extracted_at", _TIME, nullable=True),
        sa.Column("created_at", _TIME, nullable=False),
        sa.PrimaryKeyConstraint("sha256", name=op.f("pk_attachment_blobs")),
    )
    op.create_table(
        "attachments",
        sa.Column("id", _ID, nullable=False),
        sa.Column("platform", sa.String(length=16), nullable=False),
        sa.Column("message_id", sa.String(length=200), nullable=False),
        sa.Column("resource_key", sa.String(length=256), nullable=False),
        sa.Column("source", sa.String(length=200), nullable=False),
        sa.Column("scope", sa.String(length=200), nullable=False),
        sa.Column("chat_id", sa.String(length=128), nullable=True),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=512), nullable=False),
        sa.Column("declared_size", sa.BigInteger(), nullable=True),
        sa.Column("duration_ms", sa.BigInteger(), nullable=True),
        sa.Column("author", sa.String(length=512), nullable=True),
        sa.Column("sent_at", _TIME, nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=True),
        sa.Column("record_id", sa.BigInteger(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", _TIME, nullable=True),
        sa.Column("created_at", _TIME, nullable=False),
        sa.Column("updated_at", _TIME, nullable=False),
        sa.Column("lease_owner", sa.String(length=128), nullable=True),
        sa.Column("lease_expires_at", _TIME, nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_attachments")),
        sa.UniqueConstraint(
            "platform",
            "message_id",
            "resource_key",
            name=op.f("uq_attachments_platform_message_id_resource_key"),
        ),
    )
    op.create_index("ix_attachments_due", "attachments", ["state", "next_attempt_at"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_attachments_due", table_name="attachments")
    op.drop_table("attachments")
    op.drop_table("attachment_blobs")
