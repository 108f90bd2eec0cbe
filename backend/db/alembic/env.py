"""Alembic environment: runs the SQL-file revisions under an advisory lock, one transaction."""

from alembic import context
from sqlalchemy import create_engine, pool, text

from backend.db.migrations import ADVISORY_LOCK_KEY

config = context.config


def _database_url() -> str:
    url = config.get_main_option("sqlalchemy.url")
    if url:
        return url
    # Plain `alembic upgrade head`: same resolution as the backend (DATABASE_URL or embedded).
    from backend.config import get_settings
    from backend.db.connection import resolve_database_url, sqlalchemy_url

    return sqlalchemy_url(resolve_database_url(get_settings()))


def run_migrations_online() -> None:
    engine = create_engine(_database_url(), poolclass=pool.NullPool)
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=None, transactional_ddl=True)
        with context.begin_transaction():
            # A second process waits here, then finds nothing left to do.
            connection.execute(text("select pg_advisory_xact_lock(:key)"), {"key": ADVISORY_LOCK_KEY})
            context.run_migrations()


if context.is_offline_mode():
    raise SystemExit("offline (--sql) mode is not supported: the migrations are plain SQL files already")
run_migrations_online()
