"""Migration 013 on databases that already exist: old rows converted, Supabase's auth left alone,
and the retrieval indexes still used under row-level security at 10,000 chunks."""

from __future__ import annotations

import uuid

import numpy as np
import psycopg
import pytest
from alembic import command

from backend.auth import LOCAL_IDENTITY, LOCAL_USER_ID, user_identity
from backend.db import migrations
from backend.db.connection import connect
from tests.factories import (
    acting_as,
    chunk_index_scans,
    chunk_index_scans_after,
    copy_random_chunks,
    insert_document,
)

A = user_identity(uuid.UUID("aaaaaaaa-0000-4000-8000-000000000001"))


def test_existing_rows_become_public_and_old_conversations_go_to_the_local_user(fresh_database):
    url = fresh_database()
    command.upgrade(migrations.alembic_config(url), "012")
    someone = uuid.uuid4()
    with connect(url) as conn:
        # Rows as the CLI and the demo wrote them before users existed (owner_id null), and one
        # document somebody owned through direct SQL.
        conn.execute(
            "insert into documents (id, external_id, content_hash, owner_id) values "
            "('11111111-1111-4111-8111-111111111111', 'cli', 'h', null), "
            "('22222222-2222-4222-8222-222222222222', 'owned', 'h', %s)",
            (someone,),
        )
        conn.execute(
            "insert into chunks (document_id, position, content, content_hash, content_tokens, embedding, "
            "embedding_model) select id, 0, '袋鼠', 'h', '袋鼠', '[1,0,0]', 'm@3' from documents"
        )
        conn.execute(
            "insert into conversations (id, title) values ('33333333-3333-4333-8333-333333333333', 'demo')"
        )
        conn.execute(
            "insert into messages (conversation_id, role, content) "
            "values ('33333333-3333-4333-8333-333333333333', 'user', '你好')"
        )
        conn.commit()

    assert migrations.upgrade(url) == ("012", migrations.head_revision())

    with connect(url, autocommit=True) as conn:
        assert conn.execute(
            "select external_id, owner_id, visibility from documents order by 1"
        ).fetchall() == [
            ("cli", None, "public"),
            ("owned", someone, "private"),
        ]
        assert conn.execute(
            "select d.external_id, c.owner_id, c.visibility "
            "from chunks c join documents d on d.id = c.document_id order by 1"
        ).fetchall() == [("cli", None, "public"), ("owned", someone, "private")]
        assert conn.execute("select owner_id from conversations").fetchall() == [(LOCAL_USER_ID,)]
        assert conn.execute("select owner_id from messages").fetchall() == [(LOCAL_USER_ID,)]
        with acting_as(conn, LOCAL_IDENTITY):  # the demo's history survives, under RLS
            assert conn.execute("select title from conversations").fetchall() == [("demo",)]
            assert conn.execute("select count(*) from messages").fetchone() == (1,)
            assert conn.execute("select external_id from documents").fetchall() == [("cli",)]
        with acting_as(conn, A):
            assert conn.execute("select count(*) from conversations").fetchone() == (0,)
            assert conn.execute("select external_id from documents").fetchall() == [("cli",)]
            assert conn.execute("select count(*) from match_documents('[1,0,0]', 10)").fetchone() == (1,)


SUPABASE_UID = """
create function auth.uid() returns uuid language sql stable as $$
  select coalesce(
    nullif(current_setting('request.jwt.claim.sub', true), ''),
    (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub')
  )::uuid
$$;
comment on function auth.uid() is 'Supabase''s own';
"""


def test_supabase_own_auth_schema_and_functions_are_left_alone(fresh_database):
    url = fresh_database()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "do $$ begin if not exists (select 1 from pg_roles where rolname = 'authenticated') "
            "then create role authenticated nologin noinherit; end if; end $$"
        )
        conn.execute("create schema auth")
        conn.execute(SUPABASE_UID)
        conn.execute("grant usage on schema auth to authenticated")
        before = conn.execute("select pg_get_functiondef('auth.uid()'::regprocedure)").fetchone()
    migrations.upgrade(url)
    with connect(url, autocommit=True) as conn:
        assert conn.execute("select pg_get_functiondef('auth.uid()'::regprocedure)").fetchone() == before
        assert conn.execute("select obj_description('auth.uid()'::regprocedure)").fetchone() == (
            "Supabase's own",
        )
        # auth.role() and auth.jwt() were missing: created like Supabase's.
        assert conn.execute(
            "select to_regprocedure('auth.role()') is not null, to_regprocedure('auth.jwt()') is not null"
        ).fetchone() == (True, True)
        conn.execute(
            "insert into documents (external_id, content_hash, owner_id) "
            "values ('mine', 'h', %s), ('theirs', 'h', %s)",
            (A.user_id, uuid.uuid4()),
        )
        with acting_as(conn, A):
            assert conn.execute("select external_id from documents").fetchall() == [("mine",)]
        with conn.transaction(force_rollback=True):  # PostgREST's older, per-claim setting
            conn.execute(
                "select set_config('role', 'authenticated', true), "
                "set_config('request.jwt.claim.sub', %s, true)",
                (str(A.user_id),),
            )
            assert conn.execute("select external_id from documents").fetchall() == [("mine",)]


def test_migrating_twice_with_roles_already_present_changes_nothing(fresh_database):
    from tests.schema_snapshot import snapshot

    first, second = fresh_database(), fresh_database()
    migrations.upgrade(first)  # roles now exist in the cluster: the second run takes the other branches
    migrations.upgrade(second)
    assert snapshot(first) == snapshot(second)
    with psycopg.connect(second) as conn:
        policies = conn.execute("select count(*) from pg_policies where schemaname = 'public'").fetchone()
        # 17 from 013, two on research_runs (015), less the two on term_stats / corpus_stats (018),
        # one on api_keys (021), five each on collections and collection_members (024), two each on
        # ingest_jobs and ingest_job_files (026)
        assert policies == (32,)


# --- 10,000 chunks under RLS: the indexes are still used --------------------------------------------

USERS = [user_identity(uuid.UUID(int=i + 1000)) for i in range(10)]


@pytest.fixture(scope="module")
def tenant_corpus(fresh_database):
    """10,000 chunks: half in one public document, half private, spread over 10 users' documents."""
    url = fresh_database()
    migrations.upgrade(url)
    with connect(url) as conn:
        public = insert_document(conn, visibility="public")
        private = [insert_document(conn, owner_id=u.user_id) for u in USERS]
        vectors = copy_random_chunks(
            conn, 10_000, document_for=lambda i: public if i % 2 == 0 else private[(i // 2) % 10], seed=7
        )
        conn.commit()
    return url, vectors


def test_users_get_full_results_from_their_share_of_a_large_corpus(tenant_corpus):
    url, vectors = tenant_corpus
    user = USERS[3]
    with connect(url, autocommit=True) as conn, acting_as(conn, user):
        rows = conn.execute(
            "select c.owner_id, c.visibility from hybrid_search('袋鼠 编号7', %s, 20) h "
            "join chunks c on c.id = h.id",
            (vectors[7],),
        ).fetchall()
        nearest = conn.execute(
            "select c.owner_id, c.visibility from match_documents(%s, 20, -1) m join chunks c on c.id = m.id",
            (vectors[7],),
        ).fetchall()
    for found in (rows, nearest):
        assert len(found) == 20
        assert all(v == "public" or o == user.user_id for o, v in found)
    assert any(o == user.user_id for o, _ in rows)


def _plan(conn: psycopg.Connection, row_security: bool, vector: np.ndarray) -> str:
    row = conn.execute("select public.hybrid_search_query(384, %s)", (row_security,)).fetchone()
    assert row is not None
    sql = row[0]
    conn.execute(
        "prepare leg_plan (vector, tsquery, int, jsonb, float8, float8, bool, bool, text, float8, int, "
        "tsquery[], float8[], float8, float8, bigint[], jsonpath, jsonb, bool, jsonb, timestamptz, "
        f"timestamptz, timestamptz, timestamptz, bigint[], float8[], uuid[], int) as {sql}"
    )
    literal = "'[" + ",".join(f"{x:.6f}" for x in vector) + "]'"
    rows = conn.execute(
        f"explain (costs off) execute leg_plan ({literal}, or_tsquery('编号77'), 40, '{{}}', 1, 1, "
        "true, true, null, 60, 10, array[or_tsquery('编号77')], array[5.0], 0.5, 6.0, "
        "null, null, '{}', false, '{}', null, null, null, null, null, null, null, null)"
    ).fetchall()
    conn.execute("deallocate leg_plan")
    return "\n".join(r[0] for r in rows)


def test_under_rls_the_vector_leg_uses_hnsw_and_the_full_text_leg_its_matches_by_key(tenant_corpus):
    url, vectors = tenant_corpus
    with connect(url, autocommit=True) as conn, acting_as(conn, USERS[0]):
        plan = _plan(conn, True, vectors[0])
        assert "chunks_embedding_384_hnsw_idx" in plan, plan
        assert "Index Cond: (id = ANY" in plan, plan
        assert "Seq Scan on chunks" not in plan, plan
        # Why hybrid_search_visible_matches exists: the plain statement cannot use the GIN index under
        # RLS, because `@@` is not leakproof: it reads every chunk the policies admit (a sequential
        # scan, or since the collection policies of 024 a bitmap of the policies' own indexes) and
        # checks `@@` on each. If a PostgreSQL release changes that, this fails: simplify.
        plain = _plan(conn, False, vectors[0])
        assert "chunks_fts_scope_idx" not in plain, plain
        assert "Seq Scan on chunks" in plain or "chunks_visibility_owner_id_idx" in plain, plain


def test_a_users_hybrid_search_reads_the_gin_and_hnsw_indexes_and_never_scans_chunks(tenant_corpus):
    url, vectors = tenant_corpus
    with connect(url, autocommit=True) as watcher, connect(url, autocommit=True) as conn:
        before = chunk_index_scans(watcher)
        # Eight searches, one per request: past the five after which PostgreSQL may switch a cached
        # statement to a generic plan (which for the full-text helper was a scan).
        for i in range(8):
            with acting_as(conn, USERS[1]):
                conn.execute(
                    # exact_scan_threshold 0: the HNSW branch (the scope of 5,500 chunks is ranked
                    # exactly by default; tests/test_scoped_search.py covers that branch).
                    "select * from hybrid_search(%s, %s, 10, exact_scan_threshold => 0)",
                    (f"编号{70 + i} 编号{80 + i}", vectors[i]),
                ).fetchall()
        after = chunk_index_scans_after(conn, watcher, before)
    assert after["seq"] == before["seq"]
    assert after["chunks_metadata_idx"] == before["chunks_metadata_idx"]  # the empty filter folded away
    assert after["chunks_fts_scope_idx"] - before["chunks_fts_scope_idx"] == 8
    assert after["chunks_embedding_384_hnsw_idx"] - before["chunks_embedding_384_hnsw_idx"] == 8
