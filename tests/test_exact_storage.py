"""The exact plan's storage (migrations 029, 039): a user's scope without a filter is counted and ranked
in one pass of chunk_scope_vectors_idx — (collection_id, visibility, owner_id, id) include
(embedding_dims, embedding_model, embedding), the embedding in half precision — and its nearest are
measured again at full precision. chunk_scope_vectors is kept equal to the chunks by statement
triggers on every write path — ingest, bulk COPY, re-embed, delete, truncate, a document moved into
or out of a collection — in the same transaction, and is a relation no API role can read; what the
plan returns is what the heap rows say, for each user."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence

import numpy as np
import psycopg
import pytest
from psycopg.types.json import Jsonb

from backend.auth import SERVICE_IDENTITY, user_identity
from backend.testing import HashingEmbedder
from tests.factories import acting_as, loaded_document

COPY = "chunk_scope_vectors"  # the exact plan's storage: its index of vectors, or of the scope's keys (046)
A, B = (user_identity(uuid.UUID(int=n)) for n in (0xA1, 0xB1))
TEXTS = {
    "kangaroo": "尤金袋鼠分布在澳洲南部岛屿及西岸地区。",
    "koala": "考拉生活在澳洲东部的桉树林中，以桉树叶为食。",
    "panda": "大熊猫生活在中国四川的竹林中，以竹子为食。",
    "penguin": "企鹅生活在南极洲，擅长游泳，不会飞。",
}
QUERY = "澳洲的动物生活在哪里"


class ShiftedEmbedder(HashingEmbedder):
    """Another 384-d model: the hashing vectors rolled by one bucket (every vector changes)."""

    def __init__(self) -> None:
        super().__init__(384)
        self.model_id = "hashing-shifted@384"

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.roll(super().embed_documents(texts), 1, axis=1)


def _index_scans(watcher: psycopg.Connection) -> int:
    """Scans of the copy's indexes (on a small table the planner may count and rank a scope through the
    scope's keys and the rows rather than the covering index: the same copy)."""
    watcher.execute("select pg_stat_clear_snapshot()")
    row = watcher.execute(
        "select sum(idx_scan) from pg_stat_user_indexes where relname = %s", (COPY,)
    ).fetchone()
    assert row is not None
    assert row[0] is not None, f"{COPY} has no index"
    return int(row[0])


def _scans_after(watcher: psycopg.Connection, conn: psycopg.Connection, before: int) -> int:
    deadline = time.monotonic() + 5
    while True:
        conn.execute("select pg_stat_force_next_flush()")
        after = _index_scans(watcher)
        if after != before or time.monotonic() > deadline:
            return after
        time.sleep(0.1)


def exact(conn: psycopg.Connection, query: np.ndarray, model: str | None = None, **narrow) -> list[tuple]:
    """The exact plan's (id, distance) list of the caller's scope, as search_scope_scan ranks it."""
    row = conn.execute(
        "select nearest, distances from search_scope_scan(1000, %s, 384, %s, 50, collections => %s)",
        (query, model, narrow.get("collections")),
    ).fetchone()
    assert row is not None
    assert row[0] is not None
    return [(i, pytest.approx(d, abs=1e-6)) for i, d in zip(row[0], row[1], strict=True)]


def truth(conn: psycopg.Connection, query: np.ndarray, where: str = "true", model: str | None = None) -> list:
    """The same from the heap rows themselves (what the chunks say now)."""
    rows = conn.execute(
        f"select id, embedding <=> %s from chunks where embedding_dims = 384 and ({where}) "  # noqa: S608
        "and (%s::text is null or embedding_model = %s) order by 2, 1 limit 50",
        (query, model, model),
    ).fetchall()
    return [(i, d) for i, d in rows]


def check(conn: psycopg.Connection, watcher: psycopg.Connection, query: np.ndarray, **kwargs) -> list:
    """A user's exact plan == the heap's truth for what they may read, read from the covering index.

    After a vacuum, as autovacuum would run after an ingest: before the visibility map is set an
    index-only scan visits the heap anyway, and the planner may rather take a smaller index (the
    answer is the same)."""
    conn.execute("vacuum (analyze) chunks")
    before = _index_scans(watcher)
    with acting_as(conn, B):
        got = exact(conn, query, kwargs.get("model"))
    readable = f"visibility = 'public' or owner_id = '{B.user_id}'"
    assert got == truth(conn, query, readable, model=kwargs.get("model"))
    assert _scans_after(watcher, conn, before) > before, f"the exact plan did not read {COPY}"
    return got


@pytest.fixture
def watcher(database_url):
    from backend.db.connection import connect

    with connect(database_url, autocommit=True) as conn:
        yield conn


def ingest(services, names, identity=None, **kwargs):
    docs = [loaded_document(n, TEXTS[n], title=n) for n in names]
    return services.ingestion.ingest(docs, identity=identity, **kwargs)


def test_ingest_writes_what_the_exact_plan_reads(services, db, watcher):
    ingest(services, ["kangaroo", "koala"])
    query = services.embedder.embed_query(QUERY)
    assert len(check(db, watcher, query)) == db.execute("select count(*) from chunks").fetchone()[0]
    ingest(services, ["panda"])  # an ordinary second ingest: its chunks are ranked too
    assert len(check(db, watcher, query)) == db.execute("select count(*) from chunks").fetchone()[0]
    ingest(services, ["penguin"], identity=A)  # A's private document: never in B's scope
    public = db.execute("select count(*) from chunks where visibility = 'public'").fetchone()[0]
    assert len(check(db, watcher, query)) == public < db.execute("select count(*) from chunks").fetchone()[0]


def test_a_bulk_copy_load_writes_it(make_services, db, watcher):
    services = make_services()
    ingest(services, ["kangaroo"])
    summary = ingest(services, ["koala", "panda", "penguin"], bulk=True)
    assert summary.bulk is not None
    query = services.embedder.embed_query(QUERY)
    assert len(check(db, watcher, query)) == db.execute("select count(*) from chunks").fetchone()[0]


def test_reembedding_replaces_the_vectors_it_holds(make_services, db, watcher):
    from backend.documents.reembed import reembed

    old = make_services()
    ingest(old, ["kangaroo", "koala", "panda"])
    new = make_services(embedder=ShiftedEmbedder())
    reembed(new.pool, new.embedder, batch_size=2)
    query = new.embedder.embed_query(QUERY)
    got = check(db, watcher, query, model="hashing-shifted@384")
    assert len(got) == db.execute("select count(*) from chunks").fetchone()[0]
    with acting_as(db, B):
        assert exact(db, query, "hashing-test@384") == []  # no vector of the old model is left to rank


def test_a_deleted_documents_chunks_leave_it(services, db, watcher):
    from backend.documents.service import delete_document

    ingest(services, ["kangaroo", "koala"])
    doc = db.execute("select id from documents where external_id = 'koala'").fetchone()[0]
    gone = {r[0] for r in db.execute("select id from chunks where document_id = %s", (doc,)).fetchall()}
    delete_document(services.db, identity=SERVICE_IDENTITY, document_id=doc)
    query = services.embedder.embed_query("考拉 桉树")
    got = check(db, watcher, query)
    assert got
    assert not gone & {i for i, _ in got}


def test_a_document_moved_into_and_out_of_a_collection_is_ranked_for_its_members_only(services, db, watcher):
    from backend.collections.service import move_document

    ingest(services, ["kangaroo", "koala"], identity=A)
    collection = db.execute(
        "insert into collections (owner_id, name) values (%s, '动物组') returning id", (A.user_id,)
    ).fetchone()[0]
    db.execute(
        "insert into collection_members (collection_id, user_id, role) values (%s, %s, 'viewer')",
        (collection, B.user_id),
    )
    doc = db.execute("select id from documents where external_id = 'koala'").fetchone()[0]
    koala = {r[0] for r in db.execute("select id from chunks where document_id = %s", (doc,)).fetchall()}
    query = services.embedder.embed_query("考拉 桉树")

    def as_b(**narrow) -> set[int]:
        with acting_as(db, B):
            return {i for i, _ in exact(db, query, **narrow)}

    assert as_b() == set()
    assert as_b(collections=[collection]) == set()
    move_document(services.db, identity=A, document_id=doc, collection_id=collection)
    db.execute("vacuum (analyze) chunks")
    before = _index_scans(watcher)
    assert as_b() == koala == as_b(collections=[collection])
    with acting_as(db, B):
        assert exact(db, query, collections=[collection]) == truth(db, query, f"document_id = '{doc}'")
    with acting_as(db, A):  # the owner: the document in the collection and the one outside it
        assert exact(db, query) == truth(db, query, f"owner_id = '{A.user_id}'")
    assert _scans_after(watcher, db, before) > before, f"the exact plan did not read {COPY}"
    move_document(services.db, identity=A, document_id=doc, collection_id=None)
    assert as_b() == set()
    assert as_b(collections=[collection]) == set()
    with acting_as(db, A):
        assert exact(db, query) == truth(db, query, f"owner_id = '{A.user_id}'")


FILTERED = (
    "select s.nearest, s.distances from search_filter(%s) f, search_scope_scan("
    "1000, %s, 384, null, 50, case when f.residual then f.path end, f.vars, f.dates, f.containment, "
    "f.created_from, f.created_until, f.updated_from, f.updated_until) s"
)


def filtered(conn: psycopg.Connection, query: np.ndarray, search_filter: dict) -> list[tuple]:
    """A user's exact plan of a filtered scope (migration 044: counted and ranked on the copy)."""
    with acting_as(conn, B):
        row = conn.execute(FILTERED, (Jsonb(search_filter), query)).fetchone()
    assert row is not None
    assert row[0] is not None
    return [(i, pytest.approx(d, abs=1e-6)) for i, d in zip(row[0], row[1], strict=True)]


def test_a_filtered_scope_follows_its_chunks_new_dates_and_metadata(services, db):
    """The copy holds the filter's columns too (migration 044): a document re-dated, or a chunk given
    new metadata, is found by the filter that now admits it, and no longer by the one it left."""
    ingest(services, ["kangaroo", "koala", "panda"])
    query = services.embedder.embed_query(QUERY)
    koala = db.execute("select id from documents where external_id = 'koala'").fetchone()[0]
    kangaroo = db.execute("select id from documents where external_id = 'kangaroo'").fetchone()[0]
    old = {"updated_at": {"$lt": "2001-01-01"}}
    assert filtered(db, query, old) == []
    # a document's dates reach its chunks through documents_propagate_access (an update of chunks)
    db.execute("update documents set updated_at = '2000-06-01' where id = %s", (koala,))
    assert filtered(db, query, old) == truth(db, query, f"document_id = '{koala}'") != []
    recent = {"updated_at": {"$gte": "2001-01-01"}}
    assert {i for i, _ in filtered(db, query, recent)}.isdisjoint({i for i, _ in filtered(db, query, old)})
    db.execute(
        'update chunks set metadata = metadata || \'{"topic": "marsupial"}\' where document_id = %s',
        (kangaroo,),
    )
    marsupial = f"document_id = '{kangaroo}'"
    assert filtered(db, query, {"topic": "marsupial"}) == truth(db, query, marsupial) != []
    assert filtered(db, query, {"topic": {"$ne": "marsupial"}}) == truth(db, query, f"not ({marsupial})")
    db.execute("update chunks set metadata = metadata - 'topic' where document_id = %s", (kangaroo,))
    assert filtered(db, query, {"topic": "marsupial"}) == []


def test_truncating_the_chunks_empties_it(services, db, watcher):
    ingest(services, ["kangaroo", "koala"])
    assert db.execute("select count(*) from chunk_scope_vectors").fetchone()[0] > 0
    db.execute("truncate chunks")
    assert db.execute("select count(*) from chunk_scope_vectors").fetchone()[0] == 0
    ingest(services, ["panda"])  # and fills again
    query = services.embedder.embed_query(QUERY)
    assert len(check(db, watcher, query)) == db.execute("select count(*) from chunks").fetchone()[0]


def test_no_api_role_can_read_the_stored_vectors(db):
    """Every chunk's policy columns and vector, whoever owns it: no role of the API may select from the
    table (RLS is on and no policy exists, and no role is granted it), service_role included."""
    row = db.execute("select relrowsecurity from pg_class where relname = 'chunk_scope_vectors'").fetchone()
    assert row == (True,)
    for role in ("anon", "authenticated", "service_role"):
        db.execute(f"set role {role}")
        try:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                db.execute("select count(*) from chunk_scope_vectors")
        finally:
            db.execute("reset role")


def test_no_api_role_may_call_the_one_pass_ranking_directly(db):
    """search_scope_vectors trusts the uid and memberships it is given: only search_scope_scan (the
    same owner, SECURITY DEFINER) may call it, or any user could rank another user's chunks."""
    for role in ("anon", "authenticated", "service_role"):
        db.execute(f"set role {role}")
        try:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                db.execute(
                    "select * from search_scope_vectors(10, %s, null, 5, %s, '{}', null, null, 1000)",
                    (np.zeros(384, dtype=np.float32), A.user_id),
                )
        finally:
            db.execute("reset role")
