"""The filter grammar inside hybrid_search / match_documents, and the plan chosen by selectivity.

Every operator is checked for membership in both plans: the exact scan of a small scope
(exact_scan_threshold large) and the HNSW walk (exact_scan_threshold 0). The exact plan must return
exactly the brute-force filtered top-k, and neither plan may show a user another user's private chunk.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg.types.json import Jsonb

from backend.auth import user_identity
from backend.config import DEFAULT_METADATA_WHITELIST
from backend.db import migrations
from backend.db.connection import connect
from backend.retrieval.filters import compile_filter
from tests.factories import acting_as, copy_random_chunks, insert_document

EXACT, HNSW = 100_000, 0  # exact_scan_threshold of each plan
COUNT = 60
DOC_DATES = ["2024-01-15T10:00:00+00:00", "2024-03-01T12:00:00+08:00", None]  # None: the row's own


def chunk_metadata(i: int) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "lang": "zh" if i % 2 == 0 else "en",
        "tags": [f"t{i % 4}"] + (["hot"] if i % 5 == 0 else []),
        "text_len": i * 10,
        "quality_score": i / COUNT,
        "too_short": i < 10,
    }
    if i % 6 == 0:
        meta["source"] = "web"
    return meta


@pytest.fixture(scope="module")
def corpus(fresh_database):
    """60 public chunks over three documents dated 2024-01-15, 2024-03-01 (+08:00) and today."""
    url = fresh_database()
    migrations.upgrade(url)
    with connect(url) as conn:
        docs = [
            insert_document(conn, metadata={"created_at": d} if d else {}, visibility="public")
            for d in DOC_DATES
        ]
        vectors = copy_random_chunks(
            conn, COUNT, document_for=lambda i: docs[i % 3], metadata_for=chunk_metadata, seed=3
        )
        conn.commit()
    return url, vectors


def _positions(conn: psycopg.Connection, function: str, query: np.ndarray, tree: dict, threshold: int) -> set:
    if function == "match_documents":
        statement = (
            "select c.position from match_documents(%s, 120, -1, %s, exact_scan_threshold => %s) m "
            "join chunks c on c.id = m.id"
        )
    else:
        statement = (
            "select c.position from hybrid_search(null, %s, 120, filter => %s, exact_scan_threshold => %s) h "
            "join chunks c on c.id = h.id"
        )
    return {r[0] for r in conn.execute(statement, (query, Jsonb(tree), threshold)).fetchall()}


# (request filter, which chunk positions it admits); dates: document i % 3.
CASES: list[tuple[str, dict[str, Any], Any]] = [
    ("$eq shorthand", {"lang": "zh"}, lambda i, m: m["lang"] == "zh"),
    ("$eq", {"source": {"$eq": "web"}}, lambda i, m: m.get("source") == "web"),
    ("$ne (missing counts)", {"source": {"$ne": "web"}}, lambda i, m: m.get("source") != "web"),
    ("$in", {"text_len": {"$in": [0, 10, 590]}}, lambda i, m: i in (0, 1, 59)),
    ("$nin", {"lang": {"$nin": ["zh"]}}, lambda i, m: m["lang"] != "zh"),
    ("$gt", {"text_len": {"$gt": 500}}, lambda i, m: i * 10 > 500),
    ("$gte", {"quality_score": {"$gte": 0.5}}, lambda i, m: i / COUNT >= 0.5),
    ("$lt", {"text_len": {"$lt": 30}}, lambda i, m: i < 3),
    ("$lte", {"text_len": {"$lte": 30}}, lambda i, m: i <= 3),
    ("$exists true", {"source": {"$exists": True}}, lambda i, m: "source" in m),
    ("$exists false", {"source": {"$exists": False}}, lambda i, m: "source" not in m),
    ("$contains one", {"tags": {"$contains": "hot"}}, lambda i, m: "hot" in m["tags"]),
    ("list shorthand", {"tags": ["t0", "hot"]}, lambda i, m: i % 20 == 0),
    ("tag $eq", {"tags": "t1"}, lambda i, m: "t1" in m["tags"]),
    ("tag $in", {"tags": {"$in": ["t1", "t2"]}}, lambda i, m: i % 4 in (1, 2)),
    ("tag $nin", {"tags": {"$nin": ["t1", "hot"]}}, lambda i, m: i % 4 != 1 and i % 5 != 0),
    ("boolean", {"too_short": True}, lambda i, m: i < 10),
    ("several operators", {"text_len": {"$gte": 100, "$lt": 200}}, lambda i, m: 10 <= i < 20),
    (
        "$or of $and",
        {"$or": [{"$and": [{"lang": "zh"}, {"text_len": {"$lt": 100}}]}, {"tags": "hot"}]},
        lambda i, m: (i % 2 == 0 and i < 10) or i % 5 == 0,
    ),
    ("created_at day", {"created_at": "2024-01-15"}, lambda i, m: i % 3 == 0),
    ("created_at $lt a day", {"created_at": {"$lt": "2024-03-01"}}, lambda i, m: i % 3 == 0),
    ("created_at $lte a day", {"created_at": {"$lte": "2024-03-01"}}, lambda i, m: i % 3 in (0, 1)),
    ("created_at $gt a day", {"created_at": {"$gt": "2024-03-01"}}, lambda i, m: i % 3 == 2),
    (
        "created_at timestamp",
        {"created_at": {"$gte": "2024-03-01T03:59:59Z", "$lt": "2024-03-01T04:00:01Z"}},
        lambda i, m: i % 3 == 1,
    ),
    ("created_at $gt instant", {"created_at": {"$gt": "2024-03-01T04:00:00Z"}}, lambda i, m: i % 3 == 2),
    ("created_at $lte instant", {"created_at": {"$lte": "2024-03-01T04:00:00Z"}}, lambda i, m: i % 3 < 2),
    ("$eq twice", {"$and": [{"lang": "zh"}, {"text_len": {"$lt": 300}}, {"lang": "en"}]}, lambda i, m: False),
    ("created_at $in days", {"created_at": {"$in": ["2024-01-15", "2024-03-01"]}}, lambda i, m: i % 3 < 2),
    ("created_at $ne", {"created_at": {"$ne": "2024-01-15"}}, lambda i, m: i % 3 != 0),
    ("updated_at", {"updated_at": {"$gte": "2020-01-01"}}, lambda i, m: True),
    (
        "date or metadata",
        {"$or": [{"created_at": "2024-01-15"}, {"text_len": 590}]},
        lambda i, m: i % 3 == 0 or i == 59,
    ),
]


@pytest.mark.parametrize("threshold", [EXACT, HNSW], ids=["exact", "hnsw"])
@pytest.mark.parametrize(("name", "request_filter", "admits"), CASES, ids=[c[0] for c in CASES])
def test_each_operator_admits_exactly_its_chunks_in_both_plans(
    corpus, threshold, name, request_filter, admits
):
    url, vectors = corpus
    tree = compile_filter(request_filter, DEFAULT_METADATA_WHITELIST)
    expected = {i for i in range(COUNT) if admits(i, chunk_metadata(i))}
    assert 0 < len(expected) < COUNT or name in ("updated_at", "$eq twice")  # each case tells chunks apart
    with connect(url, autocommit=True) as conn:
        for function in ("match_documents", "hybrid_search"):
            assert _positions(conn, function, vectors[0], tree, threshold) == expected, function


@pytest.mark.parametrize(
    ("request_filter", "residual"),
    [
        ({"lang": "zh", "tags": ["a"], "created_at": {"$gt": "2024-01-01"}}, False),
        ({"$and": [{"lang": "zh"}, {"updated_at": "2024-01-01"}]}, False),
        ({"lang": {"$in": ["zh", "en"]}}, True),
        ({"$or": [{"lang": "zh"}, {"lang": "en"}]}, True),
        ({"$and": [{"lang": "zh"}, {"lang": "en"}]}, True),  # one containment object cannot say both
        ({"text_len": {"$gt": 3}}, True),
    ],
)
def test_the_path_is_skipped_only_when_the_index_conditions_say_everything(db, request_filter, residual):
    tree = compile_filter(request_filter, DEFAULT_METADATA_WHITELIST)
    assert db.execute("select residual from search_filter(%s)", (Jsonb(tree),)).fetchone() == (residual,)


def test_the_full_text_leg_applies_the_filter_in_both_plans(corpus):
    url, _ = corpus
    tree = compile_filter({"text_len": {"$lt": 300}}, DEFAULT_METADATA_WHITELIST)
    with connect(url, autocommit=True) as conn:
        for threshold in (EXACT, HNSW):
            rows = conn.execute(
                "select c.position from hybrid_search('袋鼠 澳洲 岛屿 地区 天气', null, 100, "
                "semantic_weight => 0, filter => %s, exact_scan_threshold => %s) h "
                "join chunks c on c.id = h.id",
                (Jsonb(tree), threshold),
            ).fetchall()
            assert rows, threshold
            assert {p for (p,) in rows} <= set(range(30)), threshold


def test_values_and_keys_never_become_sql_or_jsonpath(corpus):
    """Direct SQL callers bypass the Python whitelist: quoting, not validation, must hold here."""
    url, vectors = corpus
    with connect(url, autocommit=True) as conn:
        hostile: list[dict[str, Any]] = [
            {'lang" || $.lang == "zh': "x"},  # a key that would close the quoted key in a jsonpath
            {"lang": '" || true || "'},
            {"lang": "zh'); drop table chunks; --"},
            {"lang": {"$in": ["$.lang", "@"]}},
        ]
        for tree in hostile:
            assert _positions(conn, "match_documents", vectors[0], tree, EXACT) == set(), tree
            assert _positions(conn, "match_documents", vectors[0], tree, HNSW) == set(), tree
        assert conn.execute("select count(*) from chunks").fetchone() == (COUNT,)
        with pytest.raises(psycopg.errors.InvalidParameterValue, match=r"\$where"):
            conn.execute(
                "select * from match_documents(%s, 5, -1, %s)", (vectors[0], Jsonb({"lang": {"$where": 1}}))
            )


def test_a_documents_dates_follow_it_onto_its_chunks(corpus):
    url, _ = corpus
    with connect(url) as conn:
        row = conn.execute("select document_id from chunks where position = 2").fetchone()
        assert row is not None
        doc = row[0]
        conn.execute(
            'update documents set metadata = metadata || \'{"created_at": "2020-05-05"}\', '
            "updated_at = '2021-06-06T00:00:00Z' where id = %s",
            (doc,),
        )
        dates = conn.execute(
            "select distinct document_created_at, document_updated_at from chunks where document_id = %s",
            (doc,),
        ).fetchall()
        conn.rollback()
    assert [(a.isoformat(), b.isoformat()) for a, b in dates] == [
        ("2020-05-05T00:00:00+00:00", "2021-06-06T00:00:00+00:00")
    ]


# --- the plan chosen by selectivity, at 4,000 chunks with three owners ----------------------------

USERS = [user_identity(uuid.UUID(int=i + 2000)) for i in range(2)]


def scope_metadata(i: int) -> dict[str, Any]:
    return {"tags": ["rare"] if i % 50 == 0 else ["common"], "lang": "zh" if i % 2 else "en"}


def owner_of(i: int) -> int | None:
    """Chunk i belongs to the public document (None) or to user 0 / user 1."""
    return None if i % 4 < 2 else (i % 4) - 2


def document_of(i: int, public: uuid.UUID, private: list[uuid.UUID]) -> uuid.UUID:
    owner = owner_of(i)
    return public if owner is None else private[owner]


@pytest.fixture(scope="module")
def tenants(fresh_database):
    url = fresh_database()
    migrations.upgrade(url)
    with connect(url) as conn:
        public = insert_document(conn, visibility="public")
        private = [insert_document(conn, owner_id=u.user_id) for u in USERS]
        vectors = copy_random_chunks(
            conn,
            4000,
            document_for=lambda i: document_of(i, public, private),
            metadata_for=scope_metadata,
            seed=11,
        )
        conn.commit()
    return url, vectors


def _hnsw_scans(watcher: psycopg.Connection) -> int:
    watcher.execute("select pg_stat_clear_snapshot()")
    row = watcher.execute(
        "select idx_scan from pg_stat_user_indexes where indexrelname = 'chunks_embedding_384_hnsw_idx'"
    ).fetchone()
    assert row is not None
    return int(row[0])


def _wait_for_flush(watcher: psycopg.Connection, conn: psycopg.Connection, before: int) -> int:
    conn.execute("select pg_stat_force_next_flush()")
    deadline = time.monotonic() + 3
    while (after := _hnsw_scans(watcher)) == before and time.monotonic() < deadline:
        time.sleep(0.05)
    return after


def _as(conn: psycopg.Connection, user: int | None) -> Any:
    return acting_as(conn, USERS[user]) if user is not None else conn.transaction(force_rollback=True)


def _brute_force(vectors: np.ndarray, query: np.ndarray, admitted: list[int], k: int) -> list[int]:
    idx = np.array(admitted)
    distances = 1 - vectors[idx] @ query
    order = np.lexsort((idx, distances))  # by distance, ties by position (ids follow positions)
    return idx[order][:k].tolist()


@pytest.mark.parametrize("user", [None, 0], ids=["owner", "user"])
def test_the_exact_plan_returns_the_exact_filtered_top_k_without_hnsw(tenants, user):
    url, vectors = tenants
    query = vectors[100] + 0.3 * vectors[150]
    query /= np.linalg.norm(query)
    visible = [i for i in range(4000) if user is None or owner_of(i) in (None, user)]
    admitted = [i for i in visible if i % 50 == 0]
    with connect(url, autocommit=True) as watcher, connect(url, autocommit=True) as conn:
        before = _hnsw_scans(watcher)
        for function in ("match_documents(%s, 15, -1, %s)", "hybrid_search(null, %s, 15, filter => %s)"):
            scope = (
                acting_as(conn, USERS[user]) if user is not None else conn.transaction(force_rollback=True)
            )
            with scope:
                rows = conn.execute(
                    f"select c.position from {function} with ordinality f join chunks c on c.id = f.id "
                    "order by f.ordinality",
                    (query, Jsonb({"tags": ["rare"]})),
                ).fetchall()
            assert [p for (p,) in rows] == _brute_force(vectors, query, admitted, 15), function
            with _as(conn, user):
                counts = conn.execute(
                    f"select distinct scope_count from {function}", (query, Jsonb({"tags": ["rare"]}))
                ).fetchall()
            assert counts == [(len(admitted),)]
        assert _wait_for_flush(watcher, conn, before) == before  # the HNSW index was never read


def test_the_threshold_switches_the_plan_and_every_row_says_which_ran(tenants):
    url, vectors = tenants
    with connect(url, autocommit=True) as conn:
        # 2,000 "zh" chunks: ranked exactly under a threshold of 5,000, by the HNSW statement under 1,000.
        # A filtered scope's limit is 1.6 x the threshold in a corpus of up to 100k chunks (migration
        # 047), so 1,250 admits the 2,000 (1.6 x 1,250); hybrid_search's vector leg asks for 40
        # neighbours, x sqrt(40 / 30) (migration 045): 1,082 admits them. A scope counted is read up
        # to 1.25 x the limit and ranked exactly up to that (migration 048): 999 (a limit of 1,599,
        # read up to 1,999) and 865 (1,599 too) walk whether the block sample stops the scope or the
        # count finds it above; between those and the edges the sample decides.
        for function, edge, beyond in (
            ("match_documents(%s, 10, -1, %s, ", 1250, 999),
            ("hybrid_search('编号5', %s, 10, filter => %s, ", 1082, 865),
        ):
            statement = f"select distinct scope_count from {function}exact_scan_threshold => %s)"
            for threshold, scope_count in ((5000, 2000), (edge, 2000), (beyond, None), (0, None)):
                rows = conn.execute(statement, (vectors[5], Jsonb({"lang": "zh"}), threshold)).fetchall()
                assert rows == [(scope_count,)], (function, threshold)
        # No filter and no RLS: no scope to count.
        rows = conn.execute(
            "select distinct scope_count from match_documents(%s, 10)", (vectors[5],)
        ).fetchall()
        assert rows == [(None,)]
        with acting_as(conn, USERS[1]):  # RLS: public 2,000 + own 1,000
            rows = conn.execute(
                "select distinct scope_count from match_documents(%s, 10)", (vectors[5],)
            ).fetchall()
        assert rows == [(3000,)]


@pytest.mark.parametrize("threshold", [EXACT, HNSW], ids=["exact", "hnsw"])
def test_neither_plan_shows_a_user_another_users_private_chunks(tenants, threshold):
    url, vectors = tenants
    with connect(url, autocommit=True) as conn:
        for query_index in (1, 2, 3):  # nearest to chunks of user 0, user 1... 1 % 4 == 1: public
            for tree in ({}, {"tags": ["rare"]}, {"lang": "en"}):
                with acting_as(conn, USERS[0]):
                    rows = conn.execute(
                        "select c.owner_id, c.visibility from hybrid_search('袋鼠 编号3', %s, 40, "
                        "filter => %s, exact_scan_threshold => %s) h join chunks c on c.id = h.id",
                        (vectors[query_index + 4], Jsonb(tree), threshold),
                    ).fetchall()
                    nearest = conn.execute(
                        "select c.owner_id, c.visibility from match_documents(%s, 40, -1, %s, "
                        "exact_scan_threshold => %s) m join chunks c on c.id = m.id",
                        (vectors[query_index + 4], Jsonb(tree), threshold),
                    ).fetchall()
                for found in (rows, nearest):
                    assert len(found) == 40
                    assert all(v == "public" or o == USERS[0].user_id for o, v in found), (tree, threshold)
                assert any(o == USERS[0].user_id for o, _ in nearest)


@pytest.mark.parametrize("user", [None, 0, 1], ids=["owner", "user0", "user1"])
def test_the_scope_scan_ranks_every_admitted_chunk_in_one_pass(tenants, user):
    """search_scope_scan: every admitted id, and the k nearest of them with their cosine distances,
    closest first: the brute force over what the caller may read and the filter admits."""
    url, vectors = tenants
    query = vectors[7] + 0.5 * vectors[2]
    query /= np.linalg.norm(query)
    visible = [i for i in range(4000) if user is None or owner_of(i) in (None, user)]
    admitted = [i for i in visible if i % 50 == 0]
    with connect(url, autocommit=True) as conn, _as(conn, user):
        # The filter compiled as hybrid_search compiles it, its parts passed on (sql/search_scope_scan.sql).
        scanned = conn.execute(
            "select s.ids, s.nearest, s.distances from search_filter(%s) f, search_scope_scan("
            "1000, %s, 384, null, 12, case when f.residual then f.path end, f.vars, f.dates, f.containment, "
            "f.created_from, f.created_until, f.updated_from, f.updated_until) s",
            (Jsonb({"tags": ["rare"]}), query),
        ).fetchone()
        assert scanned is not None
        ids, nearest, distances = scanned
        rows = conn.execute("select id, position from chunks where id = any(%s)", (ids,)).fetchall()
        positions: dict[int, int] = dict(rows)
        # Over the threshold: nothing counted, nothing ranked (the caller walks HNSW).
        over = conn.execute(
            "select s.ids, s.nearest, s.distances, s.scope_count "
            "from search_scope_scan(100, %s, 384, null, 12) s",
            (query,),
        ).fetchone()
    assert sorted(positions[i] for i in ids) == admitted
    assert [positions[i] for i in nearest] == _brute_force(vectors, query, admitted, 12)
    expected = [1 - float(vectors[positions[i]] @ query) for i in nearest]
    assert distances == pytest.approx(expected, abs=1e-5)
    assert over == (None, None, None, None)


def test_the_metadata_stays_in_the_heap_row(fresh_database):
    """Migration 017: every filter recheck of a GIN match reads the metadata once per row; out of line
    (where a wide chunk row used to push it), each read was a TOAST index lookup. The embedding and
    the content still leave the row first."""
    url = fresh_database()
    migrations.upgrade(url)
    words = " ".join(f"词{i} word{i}" for i in range(400))  # ~800 distinct lexemes: a wide fts
    with connect(url) as conn:
        document = insert_document(conn, visibility="public")
        conn.execute(
            "insert into chunks (document_id, position, content, content_hash, content_tokens, embedding, "
            "embedding_model, metadata) values (%s, 0, %s, 'h', %s, %s, 'test-model@384', %s)",
            (document, words, words, np.full(384, 0.05, dtype=np.float32), Jsonb(chunk_metadata(3))),
        )
        row = conn.execute(
            "select pg_column_toast_chunk_id(metadata), pg_column_toast_chunk_id(embedding) is not null, "
            "pg_column_toast_chunk_id(content) is not null, pg_column_size(fts) from chunks"
        ).fetchone()
        conn.rollback()
    assert row is not None
    assert row[3] > 2000  # wide enough that the row needed TOAST at all
    assert row[:3] == (None, True, True)


def test_the_threshold_follows_the_corpus_and_the_one_pass_scope_admits_more(tenants):
    """Migration 029: the threshold given is that of a corpus up to 100k chunks, scaled by
    sqrt(chunks / 100k) above (the planner's row count of chunks); an unfiltered user scope, ranked
    in one pass of chunk_scope_vectors_idx, admits 2.5 times the threshold (migration 039; twice
    since 029); a filtered one 1.6 x (chunks / 100k)^(1/3) times it (migration 047)."""
    url, vectors = tenants
    zh = Jsonb({"lang": "zh"})  # 2,000 chunks, a filtered scope
    statement = "select distinct scope_count from match_documents(%s, 10, -1, %s, exact_scan_threshold => %s)"
    with connect(url, autocommit=True) as conn:
        assert conn.execute(statement, (vectors[5], zh, 1000)).fetchall() == [(None,)]
        with acting_as(conn, USERS[1]):  # public 2,000 + own 1,000, no filter: one pass, up to 2.5 x 1,300
            assert conn.execute(statement, (vectors[5], Jsonb({}), 1300)).fetchall() == [(3000,)]
            assert conn.execute(statement, (vectors[5], Jsonb({}), 1100)).fetchall() == [(None,)]
        stats = conn.execute(
            "select reltuples, relpages from pg_class where oid = 'chunks'::regclass"
        ).fetchone()
        assert stats is not None
        try:
            # As if the table held 1M chunks (pages scaled alike, so the planner's row estimates, which
            # follow the rows per page, stay): 1.6 x 1,000 x 10^(1/3) = 3,448 admits the 2,000.
            scale = 1_000_000 / stats[0]
            conn.execute(
                "update pg_class set reltuples = 1000000, relpages = %s where oid = 'chunks'::regclass",
                (round(stats[1] * scale),),
            )
            assert conn.execute(statement, (vectors[5], zh, 1000)).fetchall() == [(2000,)]
            # search_scope (no query vector) keeps the count it is given.
            assert conn.execute("select search_scope(%s, 1000)", (zh,)).fetchone() == (None,)
        finally:
            conn.execute(
                "update pg_class set reltuples = %s, relpages = %s where oid = 'chunks'::regclass", stats
            )
