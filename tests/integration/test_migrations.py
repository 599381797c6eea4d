"""Migrations: stairway up/down/up, and the models match the migrations."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect

from app.store.database import create_db_engine
from app.store.migrate import downgrade, upgrade
from app.store.models import Base

TABLES = {"sessions", "transcript_entries", "compactions", "idempotency_keys"}


def _tables(url: str) -> set[str]:
    engine = create_db_engine(url)
    try:
        return set(inspect(engine).get_table_names()) - {"alembic_version"}
    finally:
        engine.dispose()


def test_stairway_downgrade_and_upgrade_again(database_url: str) -> None:
    assert _tables(database_url) == TABLES
    downgrade(database_url, "base")
    assert _tables(database_url) == set()
    upgrade(database_url)
    assert _tables(database_url) == TABLES
    upgrade(database_url)  # a second run is a no-op


def test_models_match_the_migrations(database_url: str) -> None:
    engine = create_db_engine(database_url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(
                connection, opts={"compare_type": True, "render_as_batch": True}
            )
            assert compare_metadata(context, Base.metadata) == []
    finally:
        engine.dispose()
