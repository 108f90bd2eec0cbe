"""Through a transaction-mode pooler (what Supabase's port 6543 is): queries run, session state does not
follow a client, and a request's identity (transaction-local) never leaks to the next transaction."""

from __future__ import annotations

import uuid
from urllib.parse import urlsplit

import psycopg

from backend.auth import user_identity
from backend.db.identity import apply_identity
from tests.pgbouncer import running_pgbouncer


def test_queries_run_through_pgbouncer_in_transaction_mode(pgbouncer, database_url):
    pools = pgbouncer.admin("show config")
    assert ("pool_mode", "transaction") in {(row[0], row[1]) for row in pools}
    # No server-side prepared statements through a transaction pooler (psycopg's would break).
    with psycopg.connect(pgbouncer.url(database_url), prepare_threshold=None) as conn:
        for _ in range(10):
            assert conn.execute("select count(*) from documents").fetchone() == (0,)
        assert conn.execute("select current_database()").fetchone() == (urlsplit(database_url).path[1:],)


def test_two_clients_share_one_server_connection_and_only_transaction_local_state_is_safe(
    server_url, database_url
):
    user = user_identity(uuid.uuid4())
    with (
        running_pgbouncer(server_url, pool_size=1) as bouncer,
        psycopg.connect(bouncer.url(database_url), autocommit=True, prepare_threshold=None) as first,
        psycopg.connect(bouncer.url(database_url), autocommit=True, prepare_threshold=None) as second,
    ):
        # Both clients are served by the same server connection, one transaction at a time...
        assert (
            first.execute("select pg_backend_pid()").fetchone()
            == second.execute("select pg_backend_pid()").fetchone()
        )
        # ...so a session-level SET by one client is seen by the other: never rely on session state.
        first.execute("set pgrag.leak = 'first'")
        assert second.execute("select current_setting('pgrag.leak', true)").fetchone() == ("first",)
        # apply_identity's settings are transaction-local: they end with the transaction.
        with first.transaction():
            apply_identity(first, user)
            assert first.execute("select current_user, auth.uid()").fetchone() == (
                "authenticated",
                user.user_id,
            )
        assert second.execute(
            "select current_user = session_user, nullif(current_setting('request.jwt.claims', true), '')"
        ).fetchone() == (True, None)
