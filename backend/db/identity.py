"""A request's identity inside PostgreSQL: its role and verified claims, for one transaction only.

Row-level security (migration 013) decides what every statement can see from `auth.uid()`, which
reads `request.jwt.claims`. Both settings are transaction-local (`set_config(..., true)`), so they end
with the transaction and never leak to the next user of a pooled connection -- also through a
transaction-mode pooler (pgbouncer, Supabase's port 6543), where consecutive transactions of one
client may run on different server connections.

Roles: `authenticated` for users (and AUTH_MODE=none's local user), `service_role` for the admin
path. service_role, not the backend's own role, so that the admin path holds only the table
privileges migration 013 grants (no DDL, no TRUNCATE) and runs the same code path as everyone;
on Supabase it bypasses RLS, elsewhere its policies allow every row. The backend's own role (the
tables' owner) stays for migrations, the CLI and bulk loads.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

import psycopg
from psycopg import sql
from psycopg.pq import TransactionStatus
from psycopg_pool import ConnectionPool

from backend.auth.identity import Identity
from backend.db.connection import SEARCH_PATH
from backend.db.deadline import statement_timeout_ms as bounded_timeout

# Identifiers never come from input: the role is checked against this whitelist.
DATABASE_ROLES: Final = frozenset({"authenticated", "service_role"})


def apply_identity(
    conn: psycopg.Connection, identity: Identity, *, statement_timeout_ms: int | None = None
) -> None:
    """Switch the current transaction to the identity's role and claims (until it ends).

    The search path (and the statement timeout, when given) are set for the transaction too: a
    transaction-mode pooler does not carry a connection's session settings from one transaction to
    the next, so nothing a request relies on may live in the session. Work run under a deadline
    (backend.db.deadline.within) gets a statement timeout no later than it.
    """
    if identity.role not in DATABASE_ROLES:
        raise ValueError(f"not a request role: {identity.role!r}")
    if conn.autocommit and conn.info.transaction_status == TransactionStatus.IDLE:
        # Outside a transaction block the settings would end with this very statement.
        raise RuntimeError("apply_identity needs an open transaction: use `with conn.transaction():`")
    statement_timeout_ms = bounded_timeout(statement_timeout_ms)
    row = conn.execute(
        "select set_config('role', %s, true), set_config('search_path', %s, true), "
        "set_config('statement_timeout', coalesce(%s::text, current_setting('statement_timeout')), true), "
        "to_regprocedure('public.apply_collection_grants()') is not null",
        (identity.role, SEARCH_PATH, None if statement_timeout_ms is None else f"{statement_timeout_ms}ms"),
    ).fetchone()
    # SET LOCAL, not set_config(): on Citus it is the form that travels to the workers
    # (citus.propagate_set_commands = local), where the shards' policies call auth.uid(). SET takes no
    # bind parameter: the claims are quoted as a literal.
    claims = json.dumps(identity.database_claims(), default=str)
    conn.execute(sql.SQL("set local request.jwt.claims = {}").format(sql.Literal(claims)))
    if row is not None and row[3] and identity.role == "authenticated":
        # A distributed database (db distribute installed the function): the shards' policies read the
        # user's collection memberships from SET LOCAL settings, which this sends (sql/citus/).
        conn.execute("select public.apply_collection_grants()")


@contextmanager
def user_transaction(
    pool: ConnectionPool, identity: Identity, *, statement_timeout_ms: int | None = None
) -> Iterator[psycopg.Connection]:
    """A pooled connection in one transaction that runs as `identity`; commits on success."""
    with pool.connection() as conn, conn.transaction():
        apply_identity(conn, identity, statement_timeout_ms=statement_timeout_ms)
        yield conn
