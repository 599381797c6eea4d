"""compaction jobs: compactions asked for asynchronously, with progress (SPEC §16)

Revision ID: 0011_compaction_jobs
Revises: 0010_cost_ledger
Create Date: 2026-12-02 12:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011_compaction_jobs"
down_revision: str | None = "0010_cost_ledger"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "compaction_jobs",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("tenant", sa.String(length=100), nullable=False),
        sa.Column("session_id", sa.String(length=36), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("request", sa.JSON(), nullable=False),
        sa.Column("chunks_done", sa.Integer(), nullable=False),
        sa.Column("chunks_total", sa.Integer(), nullable=True),
        sa.Column("compaction_id", sa.String(length=36), nullable=True),
        sa.Column("error", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["sessions.id"],
            name=op.f("fk_compaction_jobs_session_id_sessions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_compaction_jobs")),
    )
    op.create_index(
        "ix_compaction_jobs_session_id", "compaction_jobs", ["session_id"], unique=False
    )
    op.create_index(
        "ix_compaction_jobs_created_at", "compaction_jobs", ["created_at"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_compaction_jobs_created_at", table_name="compaction_jobs")
    op.drop_index("ix_compaction_jobs_session_id", table_name="compaction_jobs")
    op.drop_table("compaction_jobs")
