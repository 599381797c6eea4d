"""recall: full-text search of transcript entries (backfilled), revert records, settings
changes

Revision ID: 0009_recall
Revises: 0008_leases
Create Date: 2026-12-02 12:00:00.000000

Search: every entry gets `search_text` (what it is found by), filled here for the entries
stored before; SQLite indexes it with FTS5 (an external-content table kept by triggers),
PostgreSQL with a GIN index on its tsvector. Both are created outside the models
(`app.store.search.SEARCH_INDEX_OBJECTS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

from app.store.search import (
    pg_create_statement,
    pg_drop_statement,
    sqlite_create_statements,
    sqlite_drop_statements,
    sqlite_rebuild_statement,
)

revision: str = "0009_recall"
down_revision: str | None = "0008_leases"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Entries read and written per round trip of the backfill.
_BACKFILL_BATCH = 500


def upgrade() -> None:
    op.add_column("transcript_entries", sa.Column("search_text", sa.Text(), nullable=True))
    op.add_column("compactions", sa.Column("reverted_id", sa.String(length=36), nullable=True))
    op.create_table(
        "session_changes",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("session_id", sa.String(length=36), nullable=False),
        sa.Column("changed_by", sa.String(length=100), nullable=False),
        sa.Column("via", sa.String(length=20), nullable=False),
        sa.Column("changes", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["sessions.id"],
            name=op.f("fk_session_changes_session_id_sessions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_session_changes")),
    )
    op.create_index(
        op.f("ix_session_changes_session_id"), "session_changes", ["session_id"], unique=False
    )
    bind = op.get_bind()
    _backfill(bind)
    if bind.dialect.name == "postgresql":
        op.execute(pg_create_statement())
    else:
        for statement in sqlite_create_statements():
            op.execute(statement)
        op.execute(sqlite_rebuild_statement())


def _backfill(bind: sa.Connection) -> None:
    """The indexed text of every stored entry, session by session, in order (a tool
    result is found by the name of the call before it)."""
    from app.formats.registry import FORMATS
    from app.services.sessions.indexing import EntryIndexer, parse_or_none

    sessions = bind.execute(sa.text("SELECT id, format FROM sessions ORDER BY id")).all()
    entries = sa.table(
        "transcript_entries",
        sa.column("id", sa.BigInteger()),
        sa.column("session_id", sa.String()),
        sa.column("seq", sa.BigInteger()),
        sa.column("message", sa.JSON()),
        sa.column("search_text", sa.Text()),
    )
    for session_id, fmt in sessions:
        parser = FORMATS.get(fmt) if fmt else FORMATS.default
        indexer = EntryIndexer(parser)
        after = -1
        while True:
            rows = bind.execute(
                sa.select(entries.c.id, entries.c.seq, entries.c.message)
                .where(entries.c.session_id == session_id, entries.c.seq > after)
                .order_by(entries.c.seq)
                .limit(_BACKFILL_BATCH)
            ).all()
            if not rows:
                break
            messages: list[Any] = [row.message for row in rows]
            texts = indexer.texts(messages, [parse_or_none(parser, m) for m in messages])
            bind.execute(
                entries.update()
                .where(entries.c.id == sa.bindparam("entry_id"))
                .values(search_text=sa.bindparam("text")),
                [{"entry_id": row.id, "text": t} for row, t in zip(rows, texts, strict=True)],
            )
            after = int(rows[-1].seq)


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        op.execute(pg_drop_statement())
    else:
        for statement in sqlite_drop_statements():
            op.execute(statement)
    op.drop_index(op.f("ix_session_changes_session_id"), table_name="session_changes")
    op.drop_table("session_changes")
    with op.batch_alter_table("compactions") as batch:
        batch.drop_column("reverted_id")
    with op.batch_alter_table("transcript_entries") as batch:
        batch.drop_column("search_text")
