"""A user's full-text match meets the user's scope inside the GIN index (migration 034).

The index chunks_fts_scope_idx holds each chunk's lexemes and the keys of the scopes it is read
through (chunk_scope_keys(): public, owner, collection). hybrid_search_visible_matches asks it for
the match and the caller's keys together, so GIN skips every other tenant's postings. Before, the
planner ANDed a bitmap of the whole match with the policies' btree indexes: same rows, but every
tenant's postings decoded (16-18 ms for a 1 % scope at 1M chunks, 3-5 ms now: docs/benchmarks.md).
"""

from __future__ import annotations

import uuid

import psycopg
import pytest

from backend.auth import SERVICE_IDENTITY, user_identity
from backend.db import migrations
from backend.db.connection import connect
from tests.factories import (
    acting_as,
    chunk_index_scans,
    chunk_index_scans_after,
    copy_random_chunks,
    insert_document,
)

SIZE = 10_000
READER = user_identity(uuid.UUID(int=3001))  # owns 1 %, member of the team collection (1 %)
OTHERS = [uuid.UUID(int=3100 + i) for i in range(48)]
MATCH = "袋鼠 & 澳洲 & 岛屿"  # ~7 % of every scope: the GIN index, not a scan, even at 10,000 chunks
POLICY_INDEXES = ("chunks_visibility_owner_id_idx", "chunks_owner_id_idx", "chunks_collection_id_idx")


def place(i: int) -> str:
    """1 % public, 1 % the reader's, 1 % the team's (another owner's document), the rest others'."""
    return {0: "public", 1: "reader", 2: "team"}.get(i % 100, f"other-{i % len(OTHERS)}")


@pytest.fixture(scope="module")
def corpus(fresh_database):
    url = fresh_database()
    migrations.upgrade(url)
    with connect(url) as conn:
        row = conn.execute(
            "insert into collections (owner_id, name) values (%s, '小组') returning id", (OTHERS[0],)
        ).fetchone()
        assert row is not None
        team = row[0]
        conn.execute(
            "insert into collection_members (collection_id, user_id, role) values (%s, %s, 'viewer')",
            (team, READER.user_id),
        )
        docs = {
            "public": insert_document(conn, visibility="public"),
            "reader": insert_document(conn, owner_id=READER.user_id),
            "team": insert_document(conn, owner_id=OTHERS[0]),
            **{f"other-{i}": insert_document(conn, owner_id=o) for i, o in enumerate(OTHERS)},
        }
        conn.execute("update documents set collection_id = %s where id = %s", (team, docs["team"]))
        copy_random_chunks(conn, SIZE, document_for=lambda i: docs[place(i)], seed=11)
        conn.commit()
    return url, team


def _ids(conn: psycopg.Connection, sql: str, params: tuple | dict = ()) -> set[int]:
    return {r[0] for r in conn.execute(sql, params).fetchall()}


@pytest.mark.parametrize("narrowed", [False, True], ids=["every scope read", "narrowed to the team"])
def test_the_match_is_read_within_the_callers_scope_keys_and_finds_what_the_policies_admit(corpus, narrowed):
    url, team = corpus
    collections = [team] if narrowed else None
    with connect(url, autocommit=True) as watcher, connect(url, autocommit=True) as conn:
        before = chunk_index_scans(watcher)
        with acting_as(conn, READER):
            found = _ids(
                conn,
                "select * from hybrid_search_visible_matches(%(match)s::tsquery, collections => %(c)s)",
                {"match": MATCH, "c": collections},
            )
        after = chunk_index_scans_after(conn, watcher, before)
        with acting_as(conn, READER):
            # What the policies admit, read through RLS (`@@` is not leakproof: no GIN index here).
            admitted = _ids(
                conn,
                "select id from chunks where fts @@ %(match)s::tsquery"
                " and (%(team)s::uuid is null or collection_id = %(team)s)",
                {"match": MATCH, "team": team if narrowed else None},
            )
    # Public, own and team: 3 % of the corpus.
    assert 0 < len(found) < SIZE * (0.01 if narrowed else 0.03)
    assert found == admitted
    assert after["chunks_fts_scope_idx"] - before["chunks_fts_scope_idx"] == 1
    for index in POLICY_INDEXES:  # the scope came from the GIN index's second column
        assert after[index] == before[index], index


def test_a_document_owner_outside_its_collection_still_finds_it_and_the_service_its_whole_match(corpus):
    url, team = corpus
    owner = user_identity(OTHERS[0])  # owns the team's document, is no member of the team
    with connect(url, autocommit=True) as conn:
        with acting_as(conn, owner):
            own = _ids(conn, "select * from hybrid_search_visible_matches(or_tsquery('袋鼠'))")
            in_team = _ids(conn, "select id from chunks where collection_id = %s", (team,))
        with acting_as(conn, SERVICE_IDENTITY):
            everything = _ids(conn, "select * from hybrid_search_visible_matches(or_tsquery('袋鼠'))")
        matching = _ids(conn, "select id from chunks where fts @@ or_tsquery('袋鼠')")
    assert own & in_team
    assert own <= matching
    assert everything == matching
