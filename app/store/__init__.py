"""Session store: SQLAlchemy models, engine/session factory, repositories (flush, never
commit: the service layer owns the transaction)."""
