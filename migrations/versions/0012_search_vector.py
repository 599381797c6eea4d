"""search vector: PostgreSQL's full-text search reads a stored tsvector column

Revision ID: 0012_search_vector
Revises: 0011_compaction_jobs
Create Date: 2026-12-02 13:00:00.000000

PostgreSQL only (SQLite's FTS5 index is unchanged): the GIN expression index of `0009`
is replaced by a generated, stored `search_vector` column with a GIN index on it.
Matching used the expression index, but ranking (`ts_rank_cd`) and any plan that did not
use the index parsed each entry's text again. Adding the column fills it for every entry
already stored; PostgreSQL keeps it from then on.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

from app.store.search import pg_vector_column_drop_statements, pg_vector_column_statements

revision: str = "0012_search_vector"
down_revision: str | None = "0011_compaction_jobs"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in pg_vector_column_statements():
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in pg_vector_column_drop_statements():
        op.execute(statement)
