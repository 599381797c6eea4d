"""search reads less: PostgreSQL's search index takes each entry at once, and an entry's
role is stored beside it

Revision ID: 0013_search_reads_less
Revises: 0012_search_vector
Create Date: 2026-12-02 16:00:00.000000

PostgreSQL only. A GIN index by default queues new entries in a pending list (up to
4 MB) and merges them at the next vacuum; a query must read the whole list, and the
planner, costing that, left the index for a scan of every entry of the session: a
search of a transcript appended to just now took 30-50 ms for a word found nowhere,
0.7 ms once the list was merged. A transcript is appended to all the time, so the index
now takes each entry as it is written (`fastupdate = off`), and the entries already
queued are merged here.

A hit's role was read from its message (`message ->> 'role'`), which parses the whole
JSON text of a message that may be a large tool result: it is now a stored generated
column, `search_role`, computed once when the entry is written (and here for those
already stored).
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

from app.store.search import pg_reads_less_drop_statements, pg_reads_less_statements

revision: str = "0013_search_reads_less"
down_revision: str | None = "0012_search_vector"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in pg_reads_less_statements():
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in pg_reads_less_drop_statements():
        op.execute(statement)
