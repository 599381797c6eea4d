"""inspector logins

Revision ID: 0005_ui_logins
Revises: 0004
Create Date: 2026-12-08 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005_ui_logins"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "ui_logins",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("tenant", sa.String(length=100), nullable=False),
        sa.Column("key_id", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("token_hash", name=op.f("pk_ui_logins")),
    )
    op.create_index(op.f("ix_ui_logins_expires_at"), "ui_logins", ["expires_at"], unique=False)
    op.create_index(
        "ix_ui_logins_tenant_created", "ui_logins", ["tenant", "created_at"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_ui_logins_tenant_created", table_name="ui_logins")
    op.drop_index(op.f("ix_ui_logins_expires_at"), table_name="ui_logins")
    op.drop_table("ui_logins")
