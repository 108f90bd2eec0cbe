"""A filter whose size the planner cannot estimate is counted on a block sample (migration 041).

PostgreSQL estimates a residual condition (a range, $ne, $nin: what the GIN index does not answer) as
a third of the rows whatever it says. At 1M chunks a range admitting 528 of them was estimated at
333k, so the search walked HNSW, and the walk's bound on the tuples it passes (hnsw.max_scan_tuples,
20,000) stopped it with 7-14 of the 30 rows asked for (recall@10 0.3-0.8). search_scope_scan now
counts such a scope on a sample of the table's pages: a scope the walk would not finish is ranked
exactly, a large one still walks.

What a user notices: a search filtered to a narrow range returns its nearest chunks, all of them,
however large the corpus around it. The tests stand in for a 1M corpus by lowering the walk's bound
to 100 tuples in a corpus of 1,500 chunks (the ratio of 20,000 to 300k) and its beam to 10: walked,
the twelve chunks of the narrow range came back as 3.
"""

from __future__ import annotations

import uuid

import numpy as np
import psycopg
import pytest
from psycopg.types.json import Jsonb

from backend.auth import user_identity
from tests.factories import acting_as, copy_random_chunks, insert_document

USER = user_identity(uuid.UUID(int=4101))
OTHER = user_identity(uuid.UUID(int=4102))
NARROW = {"score": {"$gte": 0.988}}  # 12 of the user's 1,000 chunks, and all 500 of the other user's
WIDE = {"score": {"$gte": 0.3}}  # 700 of the user's chunks
# The threshold 50; the beam (filtered_ef_search) 10 so that the walk's bound, not its first beam,
# decides what it finds, as in a corpus far larger than the beam.
MATCH = (
    "select id, scope_count from match_documents(%s, 10, -1, %s, exact_scan_threshold => 50, "
    "filtered_ef_search => 10)"
)
HYBRID = (
    "select id, scope_count from hybrid_search(null, %s, 10, filter => %s, exact_scan_threshold => 50, "
    "filtered_ef_search => 10)"
)


@pytest.fixture
def scored(db):
    """The user's 1,000 chunks scored 0.000-0.999 and another user's 500, all scored 0.995."""
    own = insert_document(db, owner_id=USER.user_id)
    other = insert_document(db, owner_id=OTHER.user_id)
    vectors = copy_random_chunks(
        db,
        1500,
        document_for=lambda i: own if i < 1000 else other,
        metadata_for=lambda i: {"score": i / 1000 if i < 1000 else 0.995},
        seed=41,
    )
    ids = [r[0] for r in db.execute("select id from chunks order by document_id = %s desc, position", (own,))]
    return vectors, np.array(ids)


def nearest(vectors: np.ndarray, ids: np.ndarray, query: np.ndarray, admitted: range, k: int) -> list[int]:
    chosen = np.array(list(admitted))
    distances = 1 - vectors[chosen].astype(np.float64) @ query.astype(np.float64)
    return ids[chosen[np.argsort(distances, kind="stable")[:k]]].tolist()


def search(conn: psycopg.Connection, statement: str, query: np.ndarray, tree: dict) -> list[tuple]:
    conn.execute("set local hnsw.max_scan_tuples = 100")
    return conn.execute(statement, (query, Jsonb(tree))).fetchall()


@pytest.mark.parametrize("statement", [MATCH, HYBRID], ids=["match_documents", "hybrid_search"])
def test_a_narrow_range_returns_every_nearest_chunk_of_its_scope(db, scored, statement):
    vectors, ids = scored
    for q in (3, 500, 990):
        with acting_as(db, USER):
            rows = search(db, statement, vectors[q], NARROW)
        # the exact ten nearest of the user's twelve chunks scored >= 0.988, ranked exactly
        assert [r[0] for r in rows] == nearest(vectors, ids, vectors[q], range(988, 1000), 10)
        assert {r[1] for r in rows} == {12}


def test_another_users_chunks_in_the_range_do_not_change_the_plan(db, scored):
    """The sample counts what the caller may read: the other user's 500 chunks in the range would
    make the scope large (the tables' owner sees 512, and walks); the user's own twelve are ranked
    exactly."""
    vectors, ids = scored
    with db.transaction(force_rollback=True):
        rows = search(db, MATCH, vectors[7], NARROW)
    assert {r[1] for r in rows} == {None}  # 512 admitted: above 1.5 x the limit of 50, walked
    with acting_as(db, USER):
        rows = search(db, MATCH, vectors[7], NARROW)
    assert {r[1] for r in rows} == {12}
    assert set(ids[range(1000, 1500)].tolist()).isdisjoint(r[0] for r in rows)


def test_a_wide_range_still_walks_and_finds_its_rows(db, scored):
    vectors, ids = scored
    db.execute("reset hnsw.max_scan_tuples")
    with acting_as(db, USER):
        rows = db.execute(MATCH, (vectors[800], Jsonb(WIDE))).fetchall()
    assert {r[1] for r in rows} == {None}  # ~700 admitted: the walk, not a count of the table
    assert rows[0][0] == ids[800]  # the query's own chunk (scored 0.8) first
    assert len(rows) == 10


def test_search_scope_names_a_narrow_ranges_ids_instead_of_null(db, scored):
    """search_scope() (the ids alone, for a DBA) counts a residual scope the sample finds small: its
    estimate, a third of what the user reads, had it answer null (more than 50) at once. Without a
    query vector a containment filter is counted as before 041 (migration 043): there is no walk to
    choose, the ids are the answer."""
    vectors, ids = scored
    with acting_as(db, USER):
        row = db.execute("select search_scope(%s, 50)", (Jsonb(NARROW),)).fetchone()
        wide = db.execute("select search_scope(%s, 50)", (Jsonb(WIDE),)).fetchone()
    assert row is not None
    assert sorted(row[0]) == sorted(ids[range(988, 1000)].tolist())
    assert wide == (None,)  # 700 admitted: more than 50


def test_a_scope_counted_a_little_above_the_limit_is_ranked_exactly(db, scored):
    """Migration 048: step 2 reads a filtered scope up to 1.25 x the limit and ranks one found between
    the limit and that exactly (its distances are already taken), where it gave up and walked: the
    count, then the walk. A range is estimated at a third of the table (500 of 1,500), below the limit
    (1.6 x the threshold of 320: 512), so both ranges are counted at once."""
    vectors, ids = scored
    statement = "select id, scope_count from match_documents(%s, 10, -1, %s, exact_scan_threshold => 320)"
    with acting_as(db, USER):
        inside = db.execute(statement, (vectors[100], Jsonb({"score": {"$lt": 0.58}}))).fetchall()
        beyond = db.execute(statement, (vectors[100], Jsonb({"score": {"$lt": 0.7}}))).fetchall()
    assert {r[1] for r in inside} == {580}  # above the limit of 512, within 640: ranked exactly
    assert [r[0] for r in inside] == nearest(vectors, ids, vectors[100], range(580), 10)
    assert {r[1] for r in beyond} == {None}  # 700, above 640: walked
