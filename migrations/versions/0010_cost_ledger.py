"""cost ledger: one row per billed call, as the upstream's usage reported it (SPEC §15)

Revision ID: 0010_cost_ledger
Revises: 0009_recall
Create Date: 2026-12-02 04:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010_cost_ledger"
down_revision: str | None = "0009_recall"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "cost_ledger",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("tenant", sa.String(length=100), nullable=False),
        sa.Column("session_id", sa.String(length=36), nullable=True),
        sa.Column("source", sa.String(length=20), nullable=False),
        sa.Column("api", sa.String(length=40), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("input_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cache_write_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cache_read_tokens", sa.BigInteger(), nullable=False),
        sa.Column("output_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cache_write_1h_tokens", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_cost_ledger")),
    )
    op.create_index("ix_cost_ledger_session", "cost_ledger", ["session_id"], unique=False)
    op.create_index(
        "ix_cost_ledger_tenant_created", "cost_ledger", ["tenant", "created_at"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_cost_ledger_tenant_created", table_name="cost_ledger")
    op.drop_index("ix_cost_ledger_session", table_name="cost_ledger")
    op.drop_table("cost_ledger")
