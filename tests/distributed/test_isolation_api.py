"""tests/test_isolation_api.py on the cluster: users over HTTP see the shared corpus and their own
documents, conversations and research runs, never another user's -- with RLS evaluated on the workers.

Two of those tests also open a session as B by hand. On Citus the claims must be SET LOCAL to reach
the workers (backend/db/identity.py), so those two are repeated here with that one difference, and
one more test shows what set_config() alone does there: the workers see no claims and return nothing
(closed, never open).
"""

from __future__ import annotations

import psycopg
from psycopg import sql

# Collected here against the cluster, unchanged (their `users` fixture comes in through conftest.py).
from tests.test_isolation_api import (  # noqa: F401
    SECRET_A,
    B,
    post,
    test_a_users_documents_are_theirs_and_the_shared_corpus_is_everyones,
    test_conversations_belong_to_one_user,
    test_without_a_token_only_health_and_docs_answer,
)


def as_b(db: psycopg.Connection) -> None:
    claims = f'{{"sub": "{B}", "role": "authenticated"}}'
    db.execute("select set_config('role', 'authenticated', true)")
    db.execute(sql.SQL("set local request.jwt.claims = {}").format(sql.Literal(claims)))


def test_research_runs_and_their_evidence_belong_to_one_user(users, db):
    post(users.a, "/documents", SECRET_A)
    mine = post(users.a, "/research", {"question": "紫薯芝士蛋糕要多少紫薯？"})
    assert [s["title"] for s in mine["sources"]] == ["A 的秘密配方"]
    run = mine["run_id"]
    assert users.a.get(f"/research/{run}").json()["status"] == "completed"
    assert [r["id"] for r in users.a.get("/research").json()] == [run]
    assert users.b.get(f"/research/{run}").status_code == 404
    assert users.b.get("/research").json() == []
    theirs = post(users.b, "/research", {"question": "紫薯芝士蛋糕要多少紫薯？"})
    assert theirs["sources"] == []
    follow_up = {"question": "蜂蜜呢？", "conversation_id": mine["conversation_id"]}
    assert users.b.post("/research", json=follow_up).status_code == 404
    with db.transaction():
        as_b(db)
        assert db.execute("select count(*) from research_runs").fetchone() == (1,)  # B's own
        db.execute("reset role")
    assert db.execute("select count(*) from research_runs").fetchone() == (2,)


def test_the_database_itself_hides_another_users_rows(users, db):
    post(users.a, "/documents", SECRET_A)
    post(users.a, "/chat", {"message": "紫薯芝士蛋糕要多少紫薯？"})
    with db.transaction():
        as_b(db)
        for table in ("documents", "chunks", "conversations", "messages"):
            assert db.execute(f"select count(*) from {table}").fetchone() == (0,), table
        db.execute("reset role")
    assert db.execute("select count(*) from chunks").fetchone()[0] > 0


def test_claims_set_with_set_config_do_not_reach_the_workers_and_nothing_shows(users, db):
    """PostgREST's set_config('request.jwt.claims', ..., true) stays on the coordinator: the workers'
    policies see no user, so even B's own rows stay hidden -- the cluster fails closed."""
    post(users.b, "/documents", SECRET_A)
    with db.transaction():
        db.execute(
            "select set_config('role', 'authenticated', true), set_config('request.jwt.claims', %s, true)",
            (f'{{"sub": "{B}", "role": "authenticated"}}',),
        )
        assert db.execute("select count(*) from documents").fetchone() == (0,)
        db.execute("reset role")
    with db.transaction():
        as_b(db)
        assert db.execute("select count(*) from documents").fetchone() == (1,)
        db.execute("reset role")
