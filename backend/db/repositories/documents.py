"""Documents and their chunks."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb


@dataclass(frozen=True)
class ExistingDocument:
    id: uuid.UUID
    content_hash: str
    metadata: dict[str, Any]
    embedding_models: tuple[str, ...]
    chunk_count: int
    embed_hashes: frozenset[str] = frozenset()  # the embedding-cache keys its chunks were embedded from
    owner_id: uuid.UUID | None = None
    collection_id: uuid.UUID | None = None  # the team collection it is shared in (migration 024)


@dataclass(frozen=True)
class ChunkRow:
    position: int
    content: str
    heading_path: Sequence[str]
    content_hash: str
    content_tokens: str
    embedding: np.ndarray
    metadata: dict[str, Any]
    embed_hash: str | None = None  # the embedding-cache key of the embedded text (migration 020)


def find_existing(
    conn: psycopg.Connection,
    *,
    owner_id: uuid.UUID | None,
    external_ids: Sequence[str],
    collection_id: uuid.UUID | None = None,
) -> dict[str, ExistingDocument]:
    """Documents with these external ids (for this owner; with a collection, the collection's own,
    whoever owns them, before the owner's), with what ingestion compares against."""
    rows = conn.execute(
        "select distinct on (external_id) external_id, id, content_hash, metadata, owner_id, collection_id "
        "from documents "
        "where (owner_id is not distinct from %(owner_id)s "
        "       or (%(collection)s::uuid is not null and collection_id = %(collection)s)) "
        "  and external_id = any(%(external_ids)s) "
        "order by external_id, (collection_id is not distinct from %(collection)s) desc",
        {"owner_id": owner_id, "external_ids": list(external_ids), "collection": collection_id},
    ).fetchall()
    chunks = chunk_summaries(conn, document_ids=[r[1] for r in rows])
    empty = ChunkSummary(0, (), frozenset())
    return {
        r[0]: ExistingDocument(
            r[1],
            r[2],
            r[3],
            chunks.get(r[1], empty).models,
            chunks.get(r[1], empty).count,
            chunks.get(r[1], empty).embed_hashes,
            r[4],
            r[5],
        )
        for r in rows
    }


@dataclass(frozen=True)
class ChunkSummary:
    count: int
    models: tuple[str, ...]  # the models that embedded its chunks, sorted
    embed_hashes: frozenset[str]  # the embedding-cache keys its chunks were embedded from


def chunk_summaries(
    conn: psycopg.Connection, *, document_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, ChunkSummary]:
    """Per document: how many chunks it has, which models embedded them, from which cache keys.

    A read of its own, not a join: on Citus (sql/citus/distribute.sql) documents and chunks are
    co-located by tenant, not by the document id such a join would use, and Citus joins two
    distributed tables only on their distribution column.
    """
    if not document_ids:
        return {}
    rows = conn.execute(
        "select document_id, count(*), array_agg(distinct embedding_model order by embedding_model), "
        "coalesce(array_agg(distinct embed_hash) filter (where embed_hash is not null), '{}') "
        "from chunks where document_id = any(%s) group by document_id",
        (list(document_ids),),
    ).fetchall()
    return {r[0]: ChunkSummary(int(r[1]), tuple(r[2]), frozenset(r[3])) for r in rows}


@dataclass(frozen=True)
class DocumentRow:
    external_id: str
    title: str
    source: str
    content_hash: str
    metadata: dict[str, Any]
    collection_id: uuid.UUID | None = None


@dataclass(frozen=True)
class WrittenDocument:
    id: uuid.UUID
    created: bool


def write_documents(
    conn: psycopg.Connection,
    *,
    owner_id: uuid.UUID | None,
    embedding_model: str,
    documents: Sequence[tuple[DocumentRow, Sequence[ChunkRow]]],
) -> list[WrittenDocument]:
    """Upsert documents and replace their chunks, in the caller's transaction; results in input order.

    Three statements however many documents there are (an INSERT of the rows, one DELETE of the
    replaced documents' chunks, one binary COPY of every new chunk), so the per-statement cost and the
    term-stats statement triggers are paid once per group. External ids must be distinct.
    """
    if not documents:
        return []
    # The replaced documents' chunks go first: rewriting a document row propagates its dates to its
    # chunks (migration 016), which would rewrite every old chunk just before deleting it.
    conn.execute(
        "delete from chunks c where c.document_id in (select d.id from documents d "
        "where d.owner_id is not distinct from %(owner_id)s and d.external_id = any(%(external_ids)s))",
        {"owner_id": owner_id, "external_ids": [d.external_id for d, _ in documents]},
    )
    written = _upsert_documents(conn, owner_id=owner_id, documents=[d for d, _ in documents])
    rows = ((doc.id, c) for doc, (_, chunks) in zip(written, documents, strict=True) for c in chunks)
    copy_chunks(conn, owner_id=owner_id, embedding_model=embedding_model, chunks=rows)
    return written


_CHUNK_COLUMNS = (
    "document_id, owner_id, position, content, heading_path, content_hash, content_tokens, embedding, "
    "embedding_model, metadata, embed_hash"
)


def copy_chunks(
    conn: psycopg.Connection,
    *,
    owner_id: uuid.UUID | None,
    embedding_model: str,
    chunks: Iterable[tuple[uuid.UUID, ChunkRow]],
) -> None:
    """Binary COPY of (document id, chunk) rows into chunks, in the caller's transaction.

    PostgreSQL refuses COPY into a table under row-level security, so a user's write is staged:
    COPY into a temporary table that ends with the transaction, then one INSERT ... SELECT, which
    the chunk policies check row by row (and the term-stats trigger sees as one statement).
    """
    row_security = conn.execute("select row_security_active('public.chunks')").fetchone()
    staged = bool(row_security and row_security[0])
    target = "pg_temp.chunk_stage" if staged else "chunks"
    if staged:
        conn.execute(
            "create temporary table if not exists chunk_stage (document_id uuid, owner_id uuid, "
            "position integer, content text, heading_path text[], content_hash text, content_tokens text, "
            "embedding vector, embedding_model text, metadata jsonb, embed_hash text) on commit drop"
        )
    with (
        conn.cursor() as cur,
        cur.copy(f"copy {target} ({_CHUNK_COLUMNS}) from stdin with (format binary)") as copy,
    ):
        copy.set_types(
            ["uuid", "uuid", "int4", "text", "text[]", "text", "text", "vector", "text", "jsonb", "text"]
        )
        for document_id, c in chunks:
            copy.write_row(
                [
                    document_id,
                    owner_id,
                    c.position,
                    c.content,
                    list(c.heading_path),
                    c.content_hash,
                    c.content_tokens,
                    c.embedding,
                    embedding_model,
                    Jsonb(c.metadata),
                    c.embed_hash,
                ]
            )
    if staged:
        # RETURNING: on Citus an INSERT ... SELECT without it is written to the shards by COPY, which
        # a table under RLS refuses; with it, by INSERT statements that the policies check.
        conn.execute(
            f"insert into chunks ({_CHUNK_COLUMNS}) "
            f"select {_CHUNK_COLUMNS} from pg_temp.chunk_stage returning id"
        )
        conn.execute("drop table pg_temp.chunk_stage")


def _upsert_documents(
    conn: psycopg.Connection, *, owner_id: uuid.UUID | None, documents: Sequence[DocumentRow]
) -> list[WrittenDocument]:
    rows = conn.execute(
        """
        insert into documents (owner_id, external_id, title, source, content_hash, metadata, collection_id)
        select %(owner_id)s::uuid, d.external_id, d.title, d.source, d.content_hash, d.metadata,
               d.collection_id
        from unnest(%(external_ids)s::text[], %(titles)s::text[], %(sources)s::text[],
                    %(hashes)s::text[], %(metadata)s::jsonb[], %(collections)s::uuid[])
            as d(external_id, title, source, content_hash, metadata, collection_id)
        -- By name and with no function call in the update: what Citus accepts (on Citus the
        -- constraint also holds tenant_id; excluded.updated_at is the column's default, now()).
        on conflict on constraint documents_owner_external_id_key do update
            set title = excluded.title, source = excluded.source, content_hash = excluded.content_hash,
                metadata = excluded.metadata, updated_at = excluded.updated_at,
                collection_id = excluded.collection_id
        returning external_id, id, (xmax = 0) as created
        """,
        {
            "owner_id": owner_id,
            "external_ids": [d.external_id for d in documents],
            "titles": [d.title for d in documents],
            "sources": [d.source for d in documents],
            "hashes": [d.content_hash for d in documents],
            "metadata": [Jsonb(d.metadata) for d in documents],
            "collections": [d.collection_id for d in documents],
        },
    ).fetchall()
    by_external_id = {r[0]: WrittenDocument(r[1], r[2]) for r in rows}
    return [by_external_id[d.external_id] for d in documents]


# The second line behind row-level security: what the policies of migration 013 allow a reader, in
# the query itself. %(all_rows)s is true for the service path, which may see and delete every row.
_READABLE = (
    "(%(all_rows)s or d.visibility = 'public' or d.owner_id = %(viewer)s "
    "or d.collection_id = any(public.caller_collection_ids()))"
)
_DOCUMENT_COLUMNS = (
    "d.id, d.external_id, d.title, d.source, d.content_hash, d.metadata, d.visibility, d.owner_id, "
    "d.collection_id, d.created_at, d.updated_at"
)


def list_documents(
    conn: psycopg.Connection,
    *,
    viewer: uuid.UUID | None,
    all_rows: bool,
    limit: int,
    offset: int,
    collection_id: uuid.UUID | None = None,
    mine: bool = False,
) -> tuple[list[dict[str, Any]], int]:
    """A page of the documents the viewer may read (of one collection, when given; only the viewer's
    own outside any collection with `mine`: the service path's own are the shared corpus), newest
    first, and their total count."""
    params = {
        "viewer": viewer,
        "all_rows": all_rows,
        "limit": limit,
        "offset": offset,
        "collection": collection_id,
        "mine": mine,
    }
    readable = (
        f"{_READABLE} and (%(collection)s::uuid is null or d.collection_id = %(collection)s)"
        " and (not %(mine)s or (d.owner_id is not distinct from %(viewer)s and d.collection_id is null))"
    )
    with conn.cursor(row_factory=dict_row) as cur:
        rows = cur.execute(
            f"""
            select {_DOCUMENT_COLUMNS}
            from documents d
            where {readable}
            order by d.updated_at desc, d.id
            limit %(limit)s offset %(offset)s
            """,
            params,
        ).fetchall()
        total = cur.execute(f"select count(*) as n from documents d where {readable}", params).fetchone()
    chunks = chunk_summaries(conn, document_ids=[r["id"] for r in rows])
    for row in rows:
        row["chunk_count"] = chunks[row["id"]].count if row["id"] in chunks else 0
    return rows, int(total["n"]) if total else 0


def get_document(
    conn: psycopg.Connection, *, document_id: uuid.UUID, viewer: uuid.UUID | None, all_rows: bool
) -> dict[str, Any] | None:
    """One readable document with its chunk count and embedding models, or None."""
    with conn.cursor(row_factory=dict_row) as cur:
        row = cur.execute(
            f"select {_DOCUMENT_COLUMNS} from documents d where d.id = %(id)s and {_READABLE}",
            {"id": document_id, "viewer": viewer, "all_rows": all_rows},
        ).fetchone()
    if row is not None:
        summary = chunk_summaries(conn, document_ids=[row["id"]]).get(row["id"])
        row["chunk_count"] = summary.count if summary else 0
        row["embedding_models"] = list(summary.models) if summary else []
    return row


@dataclass(frozen=True)
class Deleted:
    shared: list[uuid.UUID]  # of the deleted documents, those other users may cite (public, in a collection)


def delete_document(
    conn: psycopg.Connection, *, document_id: uuid.UUID, owner: uuid.UUID | None, all_rows: bool
) -> Deleted | None:
    """Delete a document the caller owns or edits through a collection (or any, for the service path);
    its chunks cascade. None when there was no such document."""
    rows = conn.execute(
        "delete from documents d where d.id = %(id)s and (%(all_rows)s or d.owner_id = %(owner)s "
        "or d.collection_id = any(public.caller_collection_ids('editor'))) "
        "returning d.id, d.visibility = 'public' or d.collection_id is not null",
        {"id": document_id, "owner": owner, "all_rows": all_rows},
    ).fetchall()
    return None if not rows else Deleted(shared=[r[0] for r in rows if r[1]])


# --- bulk loads: index maintenance deferred to the end of the transaction --------------------------


def chunk_texts_between(
    conn: psycopg.Connection,
    *,
    document_id: uuid.UUID,
    start: int,
    end: int,
    viewer: uuid.UUID | None,
    all_rows: bool,
) -> list[tuple[int, int, str]]:
    """(char_start, char_end, content) of the readable document's chunks whose recorded place in its
    text (metadata -> 'provenance') overlaps [start, end), in text order."""
    rows = conn.execute(
        f"""
        select (c.metadata -> 'provenance' ->> 'char_start')::int,
               (c.metadata -> 'provenance' ->> 'char_end')::int,
               c.content
        from chunks c join documents d on d.id = c.document_id
        where c.document_id = %(id)s and {_READABLE}
          and jsonb_typeof(c.metadata -> 'provenance' -> 'char_start') = 'number'
          and (c.metadata -> 'provenance' ->> 'char_end')::int > %(start)s
          and (c.metadata -> 'provenance' ->> 'char_start')::int < %(end)s
        order by 1, c.position
        """,
        {"id": document_id, "start": start, "end": end, "viewer": viewer, "all_rows": all_rows},
    ).fetchall()
    return [(r[0], r[1], r[2]) for r in rows]


def chunk_contents(
    conn: psycopg.Connection, *, chunk_ids: Sequence[int], viewer: uuid.UUID | None, all_rows: bool
) -> dict[int, str]:
    """The full text of those chunks the viewer may still read (a stored source's passage, re-read)."""
    if not chunk_ids:
        return {}
    rows = conn.execute(
        f"""
        select c.id, c.content
        from chunks c join documents d on d.id = c.document_id
        where c.id = any(%(ids)s) and {_READABLE}
        """,
        {"ids": list(chunk_ids), "viewer": viewer, "all_rows": all_rows},
    ).fetchall()
    return {int(r[0]): r[1] for r in rows}
