"""The selectivity planner sees a collection's size when a search is narrowed to it (issue 27 item 3,
migration 029): the estimate is the chunks of the narrowed collections the caller is a member of, not
the narrowing multiplied by the policies' rule (correlated with it), which made a large collection look
small and paid the bounded count of its ids before walking HNSW anyway."""

from __future__ import annotations

import time
import uuid

import psycopg
import pytest

from backend.auth import user_identity
from backend.db import migrations
from backend.db.connection import connect
from tests.factories import acting_as, copy_random_chunks, insert_document

OWNER, MEMBER = (user_identity(uuid.UUID(int=n)) for n in (0x51, 0x52))
SIZE = 4000


def place(i: int) -> str:
    """2.5 % public, 25 % in the collection (the owner's document), the rest the owner's private."""
    return "public" if i % 40 == 0 else "team" if i % 4 == 1 else "private"


@pytest.fixture(scope="module")
def team(fresh_database):
    url = fresh_database()
    migrations.upgrade(url)
    with connect(url) as conn:
        row = conn.execute(
            "insert into collections (owner_id, name) values (%s, '大组') returning id", (OWNER.user_id,)
        ).fetchone()
        assert row is not None
        collection = row[0]
        conn.execute(
            "insert into collection_members (collection_id, user_id, role) values (%s, %s, 'viewer')",
            (collection, MEMBER.user_id),
        )
        docs = {
            "public": insert_document(conn, visibility="public"),
            "team": insert_document(conn, owner_id=OWNER.user_id),
            "private": insert_document(conn, owner_id=OWNER.user_id),
        }
        conn.execute("update documents set collection_id = %s where id = %s", (collection, docs["team"]))
        vectors = copy_random_chunks(conn, SIZE, document_for=lambda i: docs[place(i)], seed=5)
        conn.commit()
    return url, collection, vectors


def _collection_index_scans(watcher: psycopg.Connection) -> int:
    watcher.execute("select pg_stat_clear_snapshot()")
    row = watcher.execute(
        "select idx_scan from pg_stat_user_indexes where indexrelname = 'chunks_collection_id_idx'"
    ).fetchone()
    assert row is not None
    return int(row[0])


def _settled(watcher: psycopg.Connection, conn: psycopg.Connection) -> int:
    """The counter once this connection's statistics are flushed (it stops moving)."""
    last = -1
    for _ in range(20):
        conn.execute("select pg_stat_force_next_flush()")
        time.sleep(0.1)
        now = _collection_index_scans(watcher)
        if now == last:
            return now
        last = now
    return last


def test_a_large_collection_is_known_large_without_counting_it(team):
    url, collection, vectors = team
    members = sum(place(i) == "team" for i in range(SIZE))
    with connect(url, autocommit=True) as watcher, connect(url, autocommit=True) as conn:
        with acting_as(conn, MEMBER):
            # The answer itself: too large for 100 (walk HNSW), exact under 2,000 with every member chunk.
            small = conn.execute(
                "select ids from search_scope_scan(100, collections => %s)", ([collection],)
            ).fetchone()
            large = conn.execute(
                "select cardinality(ids) from search_scope_scan(2000, collections => %s)", ([collection],)
            ).fetchone()
        assert small == (None,)
        assert large == (members,)
        before = _settled(watcher, conn)
        with acting_as(conn, MEMBER):
            for _ in range(3):
                conn.execute("select ids from search_scope_scan(100, collections => %s)", ([collection],))
        # 1,000 chunks against a threshold of 100: the estimate says "large" (over 4 x 100) at once.
        assert _settled(watcher, conn) == before, "the collection's ids were counted"


def _hnsw_scans(watcher: psycopg.Connection) -> int:
    watcher.execute("select pg_stat_clear_snapshot()")
    row = watcher.execute(
        "select idx_scan from pg_stat_user_indexes where indexrelname = 'chunks_embedding_384_hnsw_idx'"
    ).fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.parametrize(
    "function",
    [
        "select id from match_documents(%s, 10, -1, exact_scan_threshold => 100, collections => %s)",
        "select id from hybrid_search('编号7', %s, 10, exact_scan_threshold => 100, collections => %s)",
    ],
    ids=["match_documents", "hybrid_search"],
)
def test_a_large_collection_is_walked_through_hnsw_not_sorted_from_the_heap(team, function):
    """Above the threshold the vector leg walks HNSW. Under RLS the statement's own estimate is still
    the narrowing times the policy (~7 % of the collection here), and with bitmap scans allowed the
    planner sorted a bitmap heap scan of every chunk of the collection instead (48 ms for 9,306 of
    100k chunks, against 4 ms through HNSW)."""
    url, collection, vectors = team
    with connect(url, autocommit=True) as watcher, connect(url, autocommit=True) as conn:
        before = _hnsw_scans(watcher)
        with acting_as(conn, MEMBER):
            rows = conn.execute(function, (vectors[7], [collection])).fetchall()
        conn.execute("select pg_stat_force_next_flush()")
        deadline = time.monotonic() + 5
        while (after := _hnsw_scans(watcher)) == before and time.monotonic() < deadline:
            conn.execute("select pg_stat_force_next_flush()")
            time.sleep(0.1)
    assert len(rows) == 10
    assert after > before, "the vector leg did not walk HNSW"
