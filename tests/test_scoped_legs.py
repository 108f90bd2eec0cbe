"""A narrow user scope in a large corpus (migration 033): what the full-text leg and the exact plan read.

A user reads a few hundred chunks of a corpus where every chunk holds the same words. The user's match
is sized by the user's own term statistics, but the GIN index holds everyone's postings: the leg must
read the rows of the user's scope, not every matching row of the corpus. And hybrid_search's vector
leg, which asks for 4 x match_count neighbours, ranks a larger unfiltered scope exactly than
match_documents does (the walk's cost grows with the neighbours asked for).
"""

from __future__ import annotations

import re
import uuid

import numpy as np
import psycopg
import pytest
from psycopg.types.json import Jsonb

from backend.auth import user_identity
from backend.db import migrations
from backend.db.connection import connect
from backend.db.identity import apply_identity
from bench.latency.plans import PARAM_TYPES, vector_literal
from tests.factories import (
    acting_as,
    chunk_index_scans,
    chunk_index_scans_after,
    copy_random_chunks,
    insert_document,
    statistics_after,
)

USER = user_identity(uuid.UUID(int=3301))
OTHER = user_identity(uuid.UUID(int=3302))
CHUNKS = 6000
PUBLIC, OWN = 100, 200  # the user's scope: 300 of 6,000 chunks
# What a pass over a user's scope reads (the planner picks among them for so small a table).
SCOPE_INDEXES = {
    "chunk_scope_vectors_idx",
    "chunk_scope_vectors_scope_idx",
    "chunks_owner_id_idx",
    "chunks_visibility_owner_id_idx",
}


def reader_of(i: int) -> str:
    return "public" if i < PUBLIC else "own" if i < PUBLIC + OWN else "other"


@pytest.fixture(scope="module")
def narrow(fresh_database):
    url = fresh_database()
    migrations.upgrade(url)
    with connect(url) as conn:
        docs = {
            "public": insert_document(conn, visibility="public"),
            "own": insert_document(conn, owner_id=USER.user_id),
            "other": insert_document(conn, owner_id=OTHER.user_id),
        }
        vectors = copy_random_chunks(
            conn,
            CHUNKS,
            document_for=lambda i: docs[reader_of(i)],
            metadata_for=lambda i: {"half": i % 2},
            seed=33,
        )
        conn.execute("select refresh_term_stats()")
        conn.commit()
    with connect(url, autocommit=True) as conn:
        conn.execute("vacuum (analyze) chunks")
    return url, vectors


def test_a_users_full_text_match_reads_the_users_rows_not_every_match_of_the_corpus(narrow):
    url, _ = narrow
    with connect(url, autocommit=True) as conn:
        pages = conn.execute("select relpages from pg_class where oid = 'chunks'::regclass").fetchone()
        assert pages is not None
        with acting_as(conn, USER):
            match = conn.execute("select match_query from hybrid_search_terms('袋鼠 澳洲')").fetchone()
            assert match is not None
            before = conn.execute("select pg_stat_get_xact_blocks_fetched('chunks'::regclass)").fetchone()
            found = conn.execute(
                "select count(*) from hybrid_search_visible_matches(%s)", (match[0],)
            ).fetchone()
            after = conn.execute("select pg_stat_get_xact_blocks_fetched('chunks'::regclass)").fetchone()
    assert found is not None
    assert before is not None
    assert after is not None
    total = sum(1 for i in range(CHUNKS) if reader_of(i) != "other")
    assert 0 < found[0] <= total
    # 300 of 6,000 chunks readable: their heap pages, not the table's (every chunk matches one word).
    assert after[0] - before[0] < pages[0] / 4, (after[0] - before[0], pages[0])


def test_hybrid_search_ranks_a_scope_exactly_that_match_documents_walks(narrow):
    """One pass, threshold 100: match_documents (k 30) admits 2.5 x 100 = 250 (migration 039; 2 x
    before), hybrid_search's vector leg (k 120) 2.5 x 100 x sqrt(120 / 30) = 500: the user's 300
    chunks are ranked exactly by the latter only, and its result is the brute force's."""
    url, vectors = narrow
    query = vectors[PUBLIC + 7]
    with connect(url, autocommit=True) as conn, acting_as(conn, USER):
        walked = conn.execute(
            "select distinct scope_count from match_documents(%s, 30, -1, %s, exact_scan_threshold => 100)",
            (query, Jsonb({})),
        ).fetchall()
        ranked = conn.execute(
            "select h.scope_count, c.position from hybrid_search(null, %s, 30, exact_scan_threshold => 100) "
            "h join chunks c on c.id = h.id order by h.rrf_score desc, h.id",
            (query,),
        ).fetchall()
    assert walked == [(None,)]
    assert {count for count, _ in ranked} == {PUBLIC + OWN}
    scope = np.arange(PUBLIC + OWN)
    nearest = scope[np.argsort(-(vectors[scope] @ query), kind="stable")][:30]
    assert [p for _, p in ranked] == [int(i) for i in nearest]


@pytest.mark.parametrize(
    ("who", "request_filter", "admitted"),
    [
        (USER, {}, PUBLIC + OWN),
        (OTHER, {}, CHUNKS - OWN),
        (None, {"created_at": {"$gte": "2000-01-01"}}, CHUNKS),
        (None, {"half": 0}, CHUNKS // 2),
    ],
    ids=["300: read by key", "5,800: match first", "owner, 6,000: match first", "owner, half: match first"],
)
def test_the_exact_full_text_leg_ranks_what_the_walk_ranks(narrow, who, request_filter, admitted):
    """The exact plan's full-text leg tests `fts @@` on each id of a scope of up to 1,000 and reads the
    match first above that (migration 033): either way the rows and scores of the plan without ids.
    Without RLS above 1,000 it checks the filter on the match (migration 046: no ids come back)."""
    url, _ = narrow
    statement = (
        "select id, full_text_rank, full_text_score, scope_count from hybrid_search('袋鼠 编号7 编号4000', "
        "null, 50, semantic_weight => 0, filter => %s, exact_scan_threshold => %s) order by full_text_rank"
    )
    with connect(url, autocommit=True) as conn:
        with conn.transaction(force_rollback=True):
            if who is not None:
                apply_identity(conn, who)
            exact = conn.execute(statement, (Jsonb(request_filter), 100_000)).fetchall()
            walked = conn.execute(statement, (Jsonb(request_filter), 0)).fetchall()
    assert exact
    assert {row[3] for row in exact} == {admitted}
    assert [row[:3] for row in exact] == [row[:3] for row in walked]
    if request_filter == {"half": 0}:
        with connect(url) as conn:
            halves = conn.execute(
                "select distinct metadata ->> 'half' from chunks where id = any(%s)", ([r[0] for r in exact],)
            ).fetchall()
        assert halves == [("0",)]


def test_a_scope_estimated_above_the_one_pass_limit_is_walked_without_reading_its_vectors(narrow):
    """Threshold 110: one pass admits 275; the user's 300 chunks are estimated above that. The pass
    is the count, so a scope just above the limit paid `limit` vectors read for nothing before its
    walk (with a margin of 1.5 until migration 035: at 1M 36-38 ms against a 15-16 ms walk)."""
    url, vectors = narrow
    counted = {}
    for threshold in (110, 130):  # the limit below the scope, then above it (325: ranked in the pass)
        with connect(url, autocommit=True) as watcher, connect(url, autocommit=True) as conn:
            before = chunk_index_scans(watcher)
            with acting_as(conn, USER):
                (count,) = conn.execute(
                    "select distinct scope_count from match_documents(%s, 30, -1, %s, "
                    "exact_scan_threshold => %s)",
                    (vectors[PUBLIC + 7], Jsonb({}), threshold),
                ).fetchall()
            after = chunk_index_scans_after(conn, watcher, before)
        scanned = {k for k in after if after[k] != before[k]}
        counted[threshold] = (
            count[0],
            bool(scanned & SCOPE_INDEXES),
            "chunks_embedding_384_hnsw_idx" in scanned,
        )
    # (scope_count, the scope read through its indexes, HNSW walked)
    assert counted == {110: (None, False, True), 130: (PUBLIC + OWN, True, False)}


PARAMS = PARAM_TYPES  # hybrid_search_query's 28 parameters, as bench.latency.plans prepares them


def statement_plan(conn: psycopg.Connection, build: str, options: str, arguments: str, params: tuple) -> str:
    """EXPLAIN (options) of the statement `build` returns, PREPAREd and executed with these arguments
    (bound on the client: EXPLAIN EXECUTE takes no server-side parameters)."""
    row = conn.execute(build).fetchone()
    assert row is not None
    conn.execute(f"prepare statement_plan ({PARAMS}) as {row[0]}")
    try:
        cur = psycopg.ClientCursor(conn)
        cur.execute(f"explain ({options}) execute statement_plan ({arguments})", params)
        return "\n".join(r[0] for r in cur.fetchall())
    finally:
        conn.execute("deallocate statement_plan")


@pytest.mark.parametrize(("who", "by_key"), [(USER, True), (OTHER, False)], ids=["300 ids", "5,800 ids"])
def test_under_rls_the_exact_full_text_leg_reads_the_visible_matches_without_the_scopes_ids(
    narrow, who, by_key
):
    """Above 1,000 the visible matches are the leg's rows as they are: the same policies, filter and
    narrowing as the scope, so intersecting them with its ids again only sorted and merged both arrays
    in the primary key scan (~5 ms for 20k ids at 1M; migration 036; since 046 search_scope_scan
    returns no ids above 1,000). Up to 1,000 the ids are read by key."""
    url, vectors = narrow
    with connect(url, autocommit=True) as conn, acting_as(conn, who):
        ids = [r[0] for r in conn.execute("select id from chunks order by id").fetchall()]
        plan = statement_plan(
            conn,
            "select public.hybrid_search_query(384, true, true)",
            "costs off",
            "%s::vector, public.or_tsquery('袋鼠 澳洲'), 120, '{}', "
            "1, 1, true, true, null, 60, 30, array[public.or_tsquery('袋鼠'), public.or_tsquery('澳洲')], "
            "array[1.0, 1.0], 0.5, 6.0, %s::bigint[], null, '{}', false, '{}', null, null, null, null, "
            "%s::bigint[], %s::float8[], null, %s::int",
            (vector_literal(vectors[0]), ids if by_key else None, ids[:120], [0.5] * 120, len(ids)),
        )
    assert len(ids) == (PUBLIC + OWN if who is USER else CHUNKS - OWN)
    assert ("id = ANY ('{" in plan) is by_key, plan  # the scope's ids, in the primary key scan
    assert ("hybrid_search_visible_matches" in plan) is not by_key, plan


@pytest.mark.parametrize("terms", [2, 17])
def test_the_full_text_score_is_written_out_for_the_querys_terms(narrow, terms):
    """Up to 16 terms the sum of idf * ts_rank is written out and the slots beyond the query's terms
    fold away when the call is planned with its values: no subquery per ranked row (~3 us of ~9;
    migration 038). Beyond 16 the subquery sums them. Either way, the scores of the walk's form."""
    url, vectors = narrow
    words = [f"编号{i}" for i in range(terms)]
    with connect(url, autocommit=True) as conn:
        plan = statement_plan(
            conn,
            "select public.hybrid_search_query(384)",
            "verbose, costs off",
            "%s::vector, public.or_tsquery(%s), 120, '{}', 1, "
            "1, true, true, null, 60, 30, %s::tsquery[], %s::float8[], 0.5, 6.0, null, null, '{}', false, "
            "'{}', null, null, null, null, null, null, null, null",
            (vector_literal(vectors[0]), " ".join(words), words, [1.0] * terms),
        )
        ranked = conn.execute(
            "select id, full_text_score from hybrid_search(%s, null, 30, semantic_weight => 0) "
            "order by full_text_rank",
            (" ".join(words),),
        ).fetchall()
    assert ranked
    assert ("SubPlan" in plan) is (terms > 16), plan
    if terms <= 16:  # one ts_rank per term, each with its constant (the node outputs repeat them)
        assert len(set(re.findall(r"ts_rank\(c\w*\.fts, ([^)]*)\)", plan))) == terms, plan


def _chunk_rows_read(watcher: psycopg.Connection) -> int:
    """Rows of chunks read so far, by sequential scans and through indexes."""
    watcher.execute("select pg_stat_clear_snapshot()")
    row = watcher.execute(
        "select seq_tup_read + coalesce(idx_tup_fetch, 0) from pg_stat_user_tables where relname = 'chunks'"
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_a_text_only_search_of_a_large_scope_reads_its_match_not_every_id(narrow):
    """Without a query vector search_scope_scan returns every counted id (search_scope() reads them),
    and the full-text leg tests `fts @@` on each id it is given: above 1,000 hybrid_search passes it
    none, so it reads its match first (migration 050), as with a vector. The other user's 5,800 chunks,
    searched for two terms that are in one chunk each: the leg reads a few rows, not the 5,800 (by key,
    or on a table this small a sequential scan of it)."""
    url, _ = narrow
    statement = (
        "select id, scope_count from hybrid_search('编号7 编号4000', null, 10, semantic_weight => 0, "
        "exact_scan_threshold => 100000)"
    )
    with connect(url, autocommit=True) as watcher, connect(url, autocommit=True) as conn:
        before = _chunk_rows_read(watcher)
        with acting_as(conn, OTHER):
            rows = conn.execute(statement).fetchall()
        after = statistics_after(conn, watcher, _chunk_rows_read, before)
    assert {r[1] for r in rows} == {CHUNKS - OWN}  # counted: ranked exactly
    assert rows, "the two chunks holding the terms"
    # the scope's count reads the table once (search_scope_scan, 6,000 rows here); the leg adds the
    # few rows of its match, where reading the ids added 5,800 more
    assert after - before < CHUNKS + 1000, f"{after - before} rows of chunks read"
