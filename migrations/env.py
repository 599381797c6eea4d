"""Alembic environment: the URL comes from the caller or from the service settings."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from app.settings import Settings
from app.store.database import create_db_engine, normalize_url
from app.store.models import Base
from app.store.search import outside_the_models

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    return config.get_main_option("sqlalchemy.url") or Settings().database_url


def _configure(connection: Connection | None = None, url: str | None = None) -> None:
    context.configure(
        connection=connection,
        url=url,
        target_metadata=target_metadata,
        # SQLite cannot ALTER most things in place; batch mode copies the table instead.
        render_as_batch=True,
        compare_type=True,
        # The full-text index is raw SQL of migration 0007, not part of the models.
        include_object=outside_the_models,
    )


def run_offline() -> None:
    _configure(url=normalize_url(_url()))
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection=connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = create_db_engine(_url())
    try:
        with engine.connect() as connection:
            sqlite = connection.dialect.name == "sqlite"
            if sqlite:
                # A batch migration rebuilds a table (copy, drop, rename). With foreign
                # keys on, dropping `sessions` would cascade to every transcript entry, so
                # they are off meanwhile (SQLite's own procedure), set on the driver's
                # connection before any transaction begins (PRAGMA is a no-op inside one).
                connection.connection.driver_connection.execute("PRAGMA foreign_keys=OFF")  # type: ignore[union-attr]
            _configure(connection=connection)
            with context.begin_transaction():
                context.run_migrations()
            if sqlite:
                broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
                connection.commit()
                connection.connection.driver_connection.execute("PRAGMA foreign_keys=ON")  # type: ignore[union-attr]
                if broken:
                    raise RuntimeError(f"the migration left rows without their parent: {broken}")
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
