"""The one-pass exact plan reads half-precision copies (migration 039): a user's scope is counted and
ranked in one pass of chunk_scope_vectors_idx, the nearest by half precision are measured again at
full precision, and the k nearest of those are returned with their exact distances.

What a user notices: a scope of thousands of chunks gets exactly the nearest chunks and distances an
exact scan of the full-precision embeddings gives, and a corpus of another dimension than the local
model's (Gemini's 768) is ranked the same way instead of reading every admitted row."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pytest

from backend.auth import user_identity
from tests.factories import (
    acting_as,
    chunk_index_scans,
    chunk_index_scans_after,
    insert_chunk,
    insert_document,
)

USER = user_identity(uuid.UUID(int=3901))
OTHER = user_identity(uuid.UUID(int=3902))


def clustered(rng: np.random.Generator, count: int, dims: int, clusters: int = 40) -> np.ndarray:
    """Unit vectors around a few centres, as embeddings of related texts lie."""
    centres = rng.normal(size=(clusters, dims))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    out = centres[rng.integers(0, clusters, count)] + rng.normal(size=(count, dims)) * (0.9 / np.sqrt(dims))
    return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


def copy_vectors(conn, document_id: uuid.UUID, vectors: np.ndarray, model: str) -> list[int]:
    with (
        conn.cursor() as cur,
        cur.copy(
            "copy chunks (document_id, position, content, content_hash, content_tokens, embedding, "
            "embedding_model) from stdin with (format binary)"
        ) as copy,
    ):
        copy.set_types(["uuid", "int4", "text", "text", "text", "vector", "text"])
        for i, v in enumerate(vectors):
            copy.write_row([document_id, i, f"块{i}", f"h{i}", f"块{i}", v, model])
    rows = conn.execute(
        "select id from chunks where document_id = %s order by position", (document_id,)
    ).fetchall()
    return [r[0] for r in rows]


def scope_scan(conn, query: np.ndarray, k: int) -> tuple[Any, Any, list[int], list[float]]:
    """(scope_count, ids, nearest, distances) of the caller's scope, unfiltered."""
    row = conn.execute(
        "select scope_count, ids, nearest, distances from search_scope_scan(100000, %s, %s, null, %s)",
        (query, len(query), k),
    ).fetchone()
    assert row is not None
    return row[0], row[1], row[2], row[3]


def copy_reads(scans: dict[str, int]) -> int:
    """Scans of chunk_scope_vectors by any of its indexes or sequentially (the planner picks by the
    table's statistics), from chunk_index_scans()."""
    return scans["copy_seq"] + sum(n for name, n in scans.items() if name.startswith("chunk_scope_vectors"))


@pytest.fixture
def large_scope(db):
    """3,000 of the user's own chunks in 40 groups, and 1,000 of another user's (never in scope)."""
    rng = np.random.default_rng(39)
    own = insert_document(db, owner_id=USER.user_id)
    other = insert_document(db, owner_id=OTHER.user_id)
    vectors = clustered(rng, 3000, 384)
    ids = copy_vectors(db, own, vectors, "test-model@384")
    copy_vectors(db, other, clustered(rng, 1000, 384), "test-model@384")
    db.execute("analyze chunks")
    return rng, np.array(ids), vectors


def test_a_large_scope_gets_the_exact_nearest_chunks_and_distances(db, large_scope):
    rng, ids, vectors = large_scope
    for i in range(30):
        # a question near one of the user's chunks (the usual case), or anywhere (near-ties everywhere)
        near = vectors[i * 97] + rng.normal(size=384) * (0.6 / np.sqrt(384))
        query = near if i % 2 else rng.normal(size=384)
        query = (query / np.linalg.norm(query)).astype(np.float32)
        distances = 1 - vectors.astype(np.float64) @ query.astype(np.float64)
        order = np.argsort(distances, kind="stable")[:10]
        with acting_as(db, USER):
            count, scope, nearest, got = scope_scan(db, query, 10)
        assert count == len(ids)
        # above 1,000 no caller reads the ids (hybrid_search's full-text leg reads its match first)
        assert scope is None
        assert nearest == ids[order].tolist()
        # measured at full precision: half precision is off by ~1e-4
        assert got == pytest.approx(distances[order].tolist(), abs=1e-6)


def test_a_filtered_scope_is_measured_from_the_copy_and_exactly(db, large_scope, watcher_conn):
    """A filtered scope is counted on chunk_scope_vectors, which holds the filter's columns (migration
    044), its distances taken in half precision in the same pass (a narrow row, not the chunk and its
    out-of-line embedding) and the nearest measured again at full precision."""
    rng, ids, vectors = large_scope
    everyone = db.execute("select id, embedding from chunks order by id").fetchall()
    all_ids = np.array([r[0] for r in everyone])
    all_vectors = np.array([r[1].to_numpy() for r in everyone], dtype=np.float64)
    before = chunk_index_scans(watcher_conn)
    for i in range(6):
        query = (vectors[i * 400] + rng.normal(size=384) * (0.6 / np.sqrt(384))).astype(np.float32)
        query /= np.linalg.norm(query)
        distances = 1 - all_vectors @ query.astype(np.float64)
        order = np.argsort(distances, kind="stable")[:10]
        row = db.execute(  # as the tables' owner, a filter every chunk passes: counted, then ranked
            "select scope_count, ids, nearest, distances from search_scope_scan(100000, %s, 384, null, 10, "
            "created_from => '1900-01-01')",
            (query,),
        ).fetchone()
        assert row is not None
        assert row[:2] == (len(all_ids), None)
        assert row[2] == all_ids[order].tolist()
        assert row[3] == pytest.approx(distances[order].tolist(), abs=1e-6)
    after = chunk_index_scans_after(db, watcher_conn, before)
    assert copy_reads(after) > copy_reads(before), (
        "the filtered scope's distances were not taken from the copy"
    )


def test_a_768_dimension_corpus_is_ranked_in_one_pass(db, watcher_conn):
    rng = np.random.default_rng(768)
    own = insert_document(db, owner_id=USER.user_id)
    vectors = clustered(rng, 60, 768, clusters=6)
    ids = [
        insert_chunk(db, own, f"段落{i}", v, position=i, model="gemini-embedding-001@768")
        for i, v in enumerate(vectors)
    ]
    public = insert_document(db, visibility="public")
    public_id = insert_chunk(db, public, "公开段落", vectors[0], model="gemini-embedding-001@768")
    db.execute("vacuum (analyze) chunks")
    db.execute("vacuum (analyze) chunk_scope_vectors")
    query = vectors[5]
    before = chunk_index_scans(watcher_conn)
    with acting_as(db, USER):
        count, scope, nearest, distances = scope_scan(db, query, 5)
    after = chunk_index_scans_after(db, watcher_conn, before)
    assert copy_reads(after) > copy_reads(before), "the 768-d scope was not read from chunk_scope_vectors"
    assert count == len(ids) + 1
    assert scope is not None  # up to 1,000 the ids come back: the full-text leg reads them by key
    assert sorted(scope) == sorted([*ids, public_id])
    order = np.argsort(1 - vectors @ query, kind="stable")
    assert nearest[0] == ids[5]
    assert set(nearest[1:]) <= {ids[i] for i in order[:6]} | {public_id}
    assert distances[0] == pytest.approx(0, abs=1e-5)


@pytest.fixture
def watcher_conn(database_url):
    from backend.db.connection import connect

    with connect(database_url, autocommit=True) as conn:
        yield conn
