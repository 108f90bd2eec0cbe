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


def test_the_backend_serves_ingest_search_and_chat_through_a_transaction_pooler(
    server_url, database_url, make_services
):
    """What a deployment on Supabase's port 6543 does: no prepared statements, no session settings;
    the request's search path, timeout, role and claims are set per transaction."""
    from fastapi.testclient import TestClient

    from backend.api.app import create_app

    # Two client connections over one server connection: a prepared statement of one would collide
    # with (or be missing for) the other, exactly what a busy Supabase pooler does to a client.
    with running_pgbouncer(server_url, pool_size=1) as bouncer:
        services = make_services(database_pooler="transaction", db_pool_min_size=2, db_pool_max_size=2)
        services.db.close()  # rebuild the pools through the pooler, as DATABASE_URL would
        from backend.db.connection import create_pool

        services.db.pool = create_pool(bouncer.url(database_url), services.settings)
        assert services.settings.pooler_mode(bouncer.url(database_url)) == "transaction"
        with TestClient(create_app(services=services)) as client:
            body = {"title": "考拉", "content": "考拉生活在澳洲东部的桉树林中，以桉树叶为食。"}
            assert client.post("/documents", json=body).status_code == 200
            for _ in range(12):  # well past psycopg's prepare threshold (5) on each client connection
                hits = client.post("/search", json={"query": "考拉吃什么？"}).json()["results"]
                assert hits[0]["title"] == "考拉"
            reply = client.post("/chat", json={"message": "考拉吃什么？"})
            assert reply.status_code == 200
            conversation = reply.json()["conversation_id"]
            assert len(client.get(f"/conversations/{conversation}/messages").json()) == 2
