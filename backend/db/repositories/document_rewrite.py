"""Rewriting existing documents by id: a collection editor re-ingesting another member's document
(migration 024). Beside documents.py, whose upsert keys a document by its owner."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import psycopg
from psycopg.types.json import Jsonb

from backend.auth.identity import SHARED_SCOPE
from backend.db.repositories.documents import ChunkRow, DocumentRow, WrittenDocument, copy_chunks


def replace_documents(
    conn: psycopg.Connection,
    *,
    owner_id: uuid.UUID | None,
    embedding_model: str,
    documents: Sequence[tuple[uuid.UUID, DocumentRow, Sequence[ChunkRow]]],
) -> list[WrittenDocument]:
    """Rewrite existing documents by id, and replace their chunks: an editor re-ingesting another
    member's document of a collection (an upsert would propose a row of the editor's own, which the
    insert policy refuses before the conflict is found). Results in input order."""
    if not documents:
        return []
    ids = [doc_id for doc_id, _, _ in documents]
    conn.execute("delete from chunks c where c.document_id = any(%s)", (ids,))
    rows = [row for _, row, _ in documents]
    conn.execute(
        """
        update documents d
        set title = u.title, source = u.source, content_hash = u.content_hash, metadata = u.metadata,
            collection_id = u.collection_id, updated_at = now()
        from unnest(%(ids)s::uuid[], %(titles)s::text[], %(sources)s::text[], %(hashes)s::text[],
                    %(metadata)s::jsonb[], %(collections)s::uuid[])
            as u(id, title, source, content_hash, metadata, collection_id)
        where d.id = u.id
        """,
        {
            "ids": ids,
            "titles": [r.title for r in rows],
            "sources": [r.source for r in rows],
            "hashes": [r.content_hash for r in rows],
            "metadata": [Jsonb(r.metadata) for r in rows],
            "collections": [r.collection_id for r in rows],
        },
    )
    # Each document's chunks are written as its owner's: on a Citus cluster they go to the owner's
    # tenant (sql/citus/distribute.sql, current_tenant()); on one node the setting is read by nothing.
    owners: dict[uuid.UUID, uuid.UUID | None] = dict(
        conn.execute("select id, owner_id from documents where id = any(%s)", (ids,)).fetchall()
    )
    by_owner: dict[uuid.UUID | None, list[tuple[uuid.UUID, ChunkRow]]] = {}
    for doc_id, _, chunks in documents:
        by_owner.setdefault(owners.get(doc_id), []).extend((doc_id, c) for c in chunks)
    for owner, chunk_rows in by_owner.items():
        conn.execute("select set_config('pgrag.write_tenant', %s, true)", (str(owner or SHARED_SCOPE),))
        copy_chunks(conn, owner_id=owner_id, embedding_model=embedding_model, chunks=chunk_rows)
    conn.execute("select set_config('pgrag.write_tenant', '', true)")
    return [WrittenDocument(doc_id, False) for doc_id in ids]
