"""proxy summary cache

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 18:20:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "summary_cache",
        sa.Column(
            "id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False
        ),
        sa.Column("tenant", sa.String(length=100), nullable=False),
        sa.Column("scope_key", sa.String(length=64), nullable=False),
        sa.Column("prefix_len", sa.BigInteger(), nullable=False),
        sa.Column("prefix_hash", sa.String(length=64), nullable=False),
        sa.Column("prefix_tokens", sa.BigInteger(), nullable=False),
        sa.Column("summary_message", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_summary_cache")),
        sa.UniqueConstraint(
            "tenant",
            "scope_key",
            "prefix_hash",
            name=op.f("uq_summary_cache_tenant_scope_key_prefix_hash"),
        ),
    )
    op.create_index(
        "ix_summary_cache_tenant_scope", "summary_cache", ["tenant", "scope_key"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_summary_cache_tenant_scope", table_name="summary_cache")
    op.drop_table("summary_cache")
