"""Factories for rows with exact, tiny vectors, so ranking tests can predict the order."""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import numpy as np
import psycopg

from backend.auth import Identity
from backend.db.identity import apply_identity
from backend.ingest.documents import LoadedDocument
from backend.text import index_tokens


def unit(values: Sequence[float], dims: int = 384) -> np.ndarray:
    """A unit vector whose first components are `values` (the rest zero)."""
    v = np.zeros(dims, dtype=np.float32)
    v[: len(values)] = values
    return v / np.linalg.norm(v)


def axis(i: int, dims: int = 384) -> np.ndarray:
    """The i-th basis vector."""
    v = np.zeros(dims, dtype=np.float32)
    v[i] = 1.0
    return v


def insert_document(
    conn: psycopg.Connection,
    *,
    external_id: str | None = None,
    title: str = "",
    metadata: dict | None = None,
    owner_id: uuid.UUID | None = None,
    visibility: str | None = None,
) -> uuid.UUID:
    """A document; without `visibility`, the table's rule: private with an owner, public without."""
    external_id = external_id or uuid.uuid4().hex
    row = conn.execute(
        "insert into documents (external_id, title, content_hash, metadata, owner_id, visibility) "
        "values (%(external_id)s, %(title)s, %(hash)s, %(metadata)s, %(owner_id)s, %(visibility)s) "
        "returning id",
        {
            "external_id": external_id,
            "title": title,
            "hash": hashlib.sha256(external_id.encode()).hexdigest(),
            "metadata": json.dumps(metadata or {}),
            "owner_id": owner_id,
            "visibility": visibility,
        },
    ).fetchone()
    assert row is not None
    return row[0]


def insert_chunk(
    conn: psycopg.Connection,
    document_id: uuid.UUID,
    content: str,
    embedding: np.ndarray,
    *,
    position: int = 0,
    model: str = "test-model@384",
    metadata: dict | None = None,
    tokens: str | None = None,
) -> int:
    row = conn.execute(
        "insert into chunks (document_id, position, content, content_hash, content_tokens, embedding, "
        "embedding_model, metadata) values (%(doc)s, %(pos)s, %(content)s, %(hash)s, %(tokens)s, "
        "%(embedding)s, %(model)s, %(metadata)s) returning id",
        {
            "doc": document_id,
            "pos": position,
            "content": content,
            "hash": hashlib.sha256(content.encode()).hexdigest(),
            "tokens": index_tokens(content) if tokens is None else tokens,
            "embedding": embedding,
            "model": model,
            "metadata": json.dumps(metadata or {}),
        },
    ).fetchone()
    assert row is not None
    return row[0]


def insert_conversation(
    conn: psycopg.Connection, *, owner_id: uuid.UUID | None, title: str = ""
) -> uuid.UUID:
    row = conn.execute(
        "insert into conversations (owner_id, title) values (%s, %s) returning id", (owner_id, title)
    ).fetchone()
    assert row is not None
    return row[0]


def insert_message(
    conn: psycopg.Connection, conversation_id: uuid.UUID, content: str, role: str = "user"
) -> uuid.UUID:
    row = conn.execute(
        "insert into messages (conversation_id, role, content) values (%s, %s, %s) returning id",
        (conversation_id, role, content),
    ).fetchone()
    assert row is not None
    return row[0]


def copy_random_chunks(
    conn: psycopg.Connection,
    count: int,
    *,
    document_for: Callable[[int], uuid.UUID],
    metadata_for: Callable[[int], dict] | None = None,
    seed: int = 42,
) -> np.ndarray:
    """`count` chunks with random unit 384-d vectors and five common words plus a unique 编号<i>.

    Loaded with COPY without the HNSW index, which is then built once: far faster than `count`
    inserts into it. Returns the vectors (row i is position i); the caller commits.
    """
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(count, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    words = ["袋鼠", "澳洲", "岛屿", "地区", "天气", "历史", "音乐", "电影", "城市", "河流"]
    row = conn.execute(
        "select indexdef from pg_indexes where indexname = 'chunks_embedding_384_hnsw_idx'"
    ).fetchone()
    assert row is not None
    conn.execute("drop index chunks_embedding_384_hnsw_idx")
    with (
        conn.cursor() as cur,
        cur.copy(
            "copy chunks (document_id, position, content, content_hash, content_tokens, embedding, "
            "embedding_model, metadata) from stdin with (format binary)"
        ) as copy,
    ):
        copy.set_types(["uuid", "int4", "text", "text", "text", "vector", "text", "jsonb"])
        for i in range(count):
            tokens = " ".join(rng.choice(words, size=5)) + f" 编号{i}"
            meta = metadata_for(i) if metadata_for else {}
            copy.write_row([document_for(i), i, tokens, str(i), tokens, vectors[i], "test-model@384", meta])
    conn.execute("set maintenance_work_mem = '256MB'")
    conn.execute(row[0])
    conn.execute("analyze")
    return vectors


@contextmanager
def acting_as(conn: psycopg.Connection, identity: Identity) -> Iterator[psycopg.Connection]:
    """One transaction as `identity`, rolled back afterwards."""
    with conn.transaction(force_rollback=True):
        apply_identity(conn, identity)
        yield conn


# Documents the API tests ingest: two Chinese animals, an English sports fact, a heading-led guide.
SEARCH_DOCS = [
    {"external_id": "kangaroo", "title": "尤金袋鼠", "content": "尤金袋鼠分布在澳洲南部岛屿及西岸地区。"},
    {"external_id": "koala", "title": "考拉", "content": "考拉生活在澳洲东部的桉树林中，以桉树叶为食。"},
    {
        "external_id": "panthers",
        "title": "Carolina Panthers",
        "content": "The Panthers defense gave up just 308 points, ranking sixth in the league.",
    },
    {"external_id": "guide", "title": "指南", "content": "# 安装\n\n运行 make run 即可启动整个系统。"},
]


def loaded_document(external_id: str, content: str, title: str = "标题", **metadata: Any) -> LoadedDocument:
    """A document as a loader returns it (Markdown), for the ingestion tests."""
    return LoadedDocument(
        title=title,
        content=content,
        source="test",
        filename=None,
        content_type="text/markdown",
        external_id=external_id,
        metadata=metadata,
    )


def chunk_index_scans(watcher: psycopg.Connection) -> dict[str, int]:
    """{index name: idx_scan} of the indexes of the chunks table and of its exact plan's copy
    (chunk_scope_vectors, migration 039), "seq": the chunks' sequential scans and "copy_seq" the
    copy's, as the statistics have them now."""
    watcher.execute("select pg_stat_clear_snapshot()")
    rows = watcher.execute(
        "select indexrelname, idx_scan from pg_stat_user_indexes "
        "where relname in ('chunks', 'chunk_scope_vectors')"
    ).fetchall()
    seq: dict[str, int] = dict(
        watcher.execute(
            "select relname, seq_scan from pg_stat_user_tables "
            "where relname in ('chunks', 'chunk_scope_vectors')"
        ).fetchall()
    )
    return {**dict(rows), "seq": seq["chunks"], "copy_seq": seq.get("chunk_scope_vectors", 0)}


T = TypeVar("T")


def chunk_index_scans_after(
    conn: psycopg.Connection, watcher: psycopg.Connection, before: dict[str, int]
) -> dict[str, int]:
    """The counts once `conn` has flushed what it did since `before` (its next statement ends a
    transaction; the flush is waited for, at most 5 s)."""
    return statistics_after(conn, watcher, chunk_index_scans, before)


def statistics_after(
    conn: psycopg.Connection,
    watcher: psycopg.Connection,
    read: Callable[[psycopg.Connection], T],
    before: T,
) -> T:
    """`read(watcher)` once `conn` has flushed its statistics since `before` was read (its next
    statement ends a transaction; the flush is waited for, at most 5 s)."""
    conn.execute("select pg_stat_force_next_flush()")
    deadline = time.monotonic() + 5
    while (after := read(watcher)) == before and time.monotonic() < deadline:
        time.sleep(0.05)
    return after
