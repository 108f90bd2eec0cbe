"""Connection URLs and the bounded connection pool shared by the API, the CLI and the tests."""

from __future__ import annotations

import logging
import threading
from urllib.parse import urlsplit, urlunsplit

import psycopg
from pgvector.psycopg import register_vector
from psycopg_pool import ConnectionPool

from backend.config import Settings
from backend.db.embedded import embedded_server_running, start_embedded_server
from backend.db.repositories.prewarm import prewarm_hnsw
from backend.db.tuning import embedded_settings

logger = logging.getLogger(__name__)

# Supabase puts extensions in their own schema; we do the same everywhere.
SEARCH_PATH = "public,extensions"


def resolve_database_url(settings: Settings) -> str:
    """The configured DATABASE_URL, or the URI of the embedded server (started if needed)."""
    if settings.uses_embedded_db:
        starting = not embedded_server_running(settings.embedded_db_dir)
        tuning = embedded_settings(
            settings.embedded_db_memory_mb, settings.embedded_db_cpus, settings.embedded_db_settings
        )
        url = start_embedded_server(settings.embedded_db_dir, tuning)
        if starting and settings.embedded_db_prewarm:
            # A daemon thread, not a task of the request tree: it only reads, and a process that
            # exits first simply leaves the cache half warm.
            threading.Thread(target=prewarm, args=(url,), name="pgrag-prewarm", daemon=True).start()
        return url
    return settings.database_url.strip()


def prewarm(url: str) -> None:
    """Walk the HNSW indexes once (backend/db/repositories/prewarm.py); failures are only logged."""
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            for done in prewarm_hnsw(conn):
                logger.info("prewarmed %(index)s: %(visited)s elements in %(seconds).1f s", done)
    except psycopg.Error as exc:
        logger.warning("prewarming the HNSW indexes failed: %s", exc)


def sqlalchemy_url(url: str) -> str:
    """The same URL with the psycopg 3 driver named, as SQLAlchemy (for Alembic) wants it."""
    parts = urlsplit(url)
    if parts.scheme in ("postgres", "postgresql"):
        parts = parts._replace(scheme="postgresql+psycopg")
    return urlunsplit(parts)


def redact(url: str) -> str:
    """The URL with any password replaced, for logs and messages."""
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        parts = parts._replace(netloc=netloc)
    return urlunsplit(parts)


def configure_connection(conn: psycopg.Connection) -> None:
    """Per-connection set-up: search_path for the extensions schema and the pgvector adapters."""
    conn.execute(f"set search_path = {SEARCH_PATH}")
    register_vector(conn)
    conn.commit()


def connect(url: str, **kwargs: object) -> psycopg.Connection:
    """One configured connection (for migrations, scripts and tests)."""
    conn = psycopg.connect(url, **kwargs)  # type: ignore[arg-type]
    configure_connection(conn)
    return conn


def create_pool(url: str, settings: Settings, *, name: str = "pgrag") -> ConnectionPool:
    """A bounded pool; each connection is configured once when it is created.

    Behind a transaction-mode pooler (DATABASE_POOLER, or Supabase's port 6543) consecutive
    transactions may run on different server connections: no server-side prepared statements, and
    no startup options (the pooler refuses them). Request transactions set their own search path and
    statement timeout (backend.db.identity), so nothing depends on the session.
    """
    kwargs: dict[str, object] = {}
    if settings.pooler_mode(url) == "transaction":
        kwargs["prepare_threshold"] = None
    else:
        kwargs["options"] = f"-c statement_timeout={settings.db_statement_timeout_ms}"
    pool = ConnectionPool(
        url,
        min_size=settings.db_pool_min_size,
        max_size=settings.db_pool_max_size,
        kwargs=kwargs,
        configure=configure_connection,
        open=False,
        name=name,
    )
    pool.open(wait=True, timeout=30)
    return pool
