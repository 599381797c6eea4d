"""bound proxy turns (atomic, idempotent binding) and a compaction lease per session

Revision ID: 0007_bound_turns
Revises: 0006
Create Date: 2026-12-02 03:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007_bound_turns"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "bound_turns",
        sa.Column("session_id", sa.String(length=36), nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("request_hash", sa.String(length=64), nullable=False),
        sa.Column("end_seq", sa.BigInteger(), nullable=False),
        sa.Column("reply_end_seq", sa.BigInteger(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["sessions.id"],
            name=op.f("fk_bound_turns_session_id_sessions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("session_id", "key", name=op.f("pk_bound_turns")),
    )
    op.create_index("ix_bound_turns_created_at", "bound_turns", ["created_at"], unique=False)
    # Plain ADD COLUMNs of nullable columns: SQLite needs no table copy for them.
    op.add_column(
        "sessions", sa.Column("compaction_lease_owner", sa.String(length=36), nullable=True)
    )
    op.add_column(
        "sessions",
        sa.Column("compaction_lease_until", sa.DateTime(timezone=True), nullable=True),
    )


def downgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("compaction_lease_until")
        batch.drop_column("compaction_lease_owner")
    op.drop_index("ix_bound_turns_created_at", table_name="bound_turns")
    op.drop_table("bound_turns")
