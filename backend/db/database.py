"""The one way user-facing work reaches PostgreSQL: a transaction as the caller, so RLS decides.

`as_user(identity)` opens a transaction on the primary (or, for searches, on the read replica of
DATABASE_READ_URL), switches it to the caller's role and claims, and sets the search path and the
statement timeout for that transaction only, which is what a transaction-mode pooler allows.
`owner()` is the backend's own role (the tables' owner, bypassing RLS): for migrations, the CLI's
bulk loads and the shared embedding cache, never for what a request reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg_pool import ConnectionPool

from backend.auth.identity import Identity
from backend.config import Settings
from backend.db.identity import apply_identity


class Database:
    """The pools (primary, optional read replica) and the transactions user work runs in."""

    def __init__(self, pool: ConnectionPool, settings: Settings, read_pool: ConnectionPool | None = None):
        self.pool = pool
        self.read_pool = read_pool
        self.settings = settings

    @contextmanager
    def as_user(
        self, identity: Identity, *, read_only: bool = False, snapshot: bool = False, replica: bool = False
    ) -> Iterator[psycopg.Connection]:
        """A connection in one transaction as `identity`; commits on success, rolls back on error.

        read_only: the transaction writes nothing. snapshot: every statement reads one snapshot
        (repeatable read), for reads that must agree with each other. replica: may run on the read
        replica (DATABASE_READ_URL) - searches only: a replica lags, and lists read right after a
        write must show it.
        """
        pool = self.read_pool if replica and self.read_pool else self.pool
        with pool.connection() as conn, conn.transaction():
            if snapshot:
                conn.execute("set transaction isolation level repeatable read, read only")
            elif read_only:
                conn.execute("set transaction read only")
            apply_identity(conn, identity, statement_timeout_ms=self.settings.db_statement_timeout_ms)
            yield conn

    @contextmanager
    def owner(self) -> Iterator[psycopg.Connection]:
        """A connection as the backend's own role (no RLS): not for anything a request reads."""
        with self.pool.connection() as conn:
            yield conn

    def close(self) -> None:
        if self.read_pool is not None:
            self.read_pool.close()
        self.pool.close()
