"""Calls of the retrieval functions in sql/ (by name, with named parameters)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from backend.errors import EmbeddingModelMismatch
from backend.retrieval.params import HYBRID, MATCH, TERMS, HybridParams


@dataclass(frozen=True)
class Prefetched:
    """What one search reads in one snapshot: its candidate rows, the chunk count of each document they
    come from (for confidence), and the query terms' (df, idf) as the full-text leg weighed them."""

    rows: list[dict[str, Any]]
    chunk_totals: dict[str, int]
    term_stats: dict[str, tuple[int, float]]


def prefetch(
    conn: psycopg.Connection,
    *,
    leg: Literal["vector", "hybrid"],
    query_text: str,
    query_embedding: np.ndarray | None,
    match_count: int,
    filter: dict[str, Any],
    embedding_model: str | None,
    params: HybridParams,
    collections: list[uuid.UUID] | None = None,
) -> Prefetched:
    """Stage 1 of a search: match_documents (leg "vector") or hybrid_search, then the documents' chunk
    counts and the terms' statistics. Call it in one snapshot, so that a document deleted or re-ingested
    in between leaves no row whose document has no chunk count."""
    if leg == "vector":
        assert query_embedding is not None
        rows = match_documents(
            conn,
            query_embedding=query_embedding,
            match_count=match_count,
            filter=filter,
            embedding_model=embedding_model,
            params=params,
            collections=collections,
        )
    else:
        rows = hybrid_search(
            conn,
            query_text=query_text,
            query_embedding=query_embedding,
            match_count=match_count,
            filter=filter,
            embedding_model=embedding_model,
            params=params,
            collections=collections,
        )
    totals = chunk_counts(conn, document_ids=[r["document_id"] for r in rows])
    return Prefetched(rows, totals, term_statistics(conn, query_text=query_text, params=params))


def hybrid_search(
    conn: psycopg.Connection,
    *,
    query_text: str | None,
    query_embedding: np.ndarray | None,
    match_count: int,
    filter: dict[str, Any],
    embedding_model: str | None,
    params: HybridParams,
    collections: list[uuid.UUID] | None = None,
) -> list[dict[str, Any]]:
    """Stage 1 prefetch: public.hybrid_search (full-text OR + HNSW, fused by RRF)."""
    return _call_function(
        conn,
        HYBRID,
        {
            "query_text": query_text,
            "query_embedding": query_embedding,
            "match_count": match_count,
            "filter": Jsonb(filter),
            "query_embedding_model": embedding_model,
            **params.sql_args(HYBRID),
            **_narrowed(collections),
        },
    )


def match_documents(
    conn: psycopg.Connection,
    *,
    query_embedding: np.ndarray,
    match_count: int,
    filter: dict[str, Any],
    embedding_model: str | None,
    params: HybridParams,
    collections: list[uuid.UUID] | None = None,
) -> list[dict[str, Any]]:
    """Vector-only prefetch: public.match_documents (cosine, min_similarity floor)."""
    return _call_function(
        conn,
        MATCH,
        {
            "query_embedding": query_embedding,
            "match_count": match_count,
            "filter": Jsonb(filter),
            "query_embedding_model": embedding_model,
            **params.sql_args(MATCH),
            **_narrowed(collections),
        },
    )


def _narrowed(collections: list[uuid.UUID] | None) -> dict[str, Any]:
    """The `collections` argument, only when the search is narrowed (the SQL default is every chunk)."""
    return {} if collections is None else {"collections": list(collections)}


def chunk_counts(conn: psycopg.Connection, *, document_ids: list[Any]) -> dict[str, int]:
    """Total chunks of each document (the confidence score's document size)."""
    if not document_ids:
        return {}
    rows = conn.execute(
        "select document_id::text, count(*) from chunks where document_id = any(%s) group by 1",
        (list(set(document_ids)),),
    ).fetchall()
    return {r[0]: int(r[1]) for r in rows}


def _call_function(conn: psycopg.Connection, function: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    """`select * from function(name => value, ...)`: the names are HybridParams fields and fixed keys
    of this module (never caller input), the values are bound parameters."""
    named = sql.SQL(", ").join(
        sql.SQL("{} => {}").format(sql.Identifier(name), sql.Placeholder(name)) for name in args
    )
    statement = sql.SQL("select * from {}({})").format(sql.Identifier("public", function), named)
    try:
        with conn.cursor(row_factory=dict_row) as cur:
            return cur.execute(statement, args).fetchall()
    except psycopg.errors.InvalidParameterValue as exc:
        if "does not match the stored chunks" in str(exc):
            hint = exc.diag.message_hint or ""
            raise EmbeddingModelMismatch(f"{exc.diag.message_primary}. {hint}".strip()) from exc
        raise


def similarities(
    conn: psycopg.Connection,
    *,
    chunk_ids: list[int],
    query_embedding: np.ndarray,
    embedding_model: str | None = None,
) -> dict[int, float]:
    """Cosine of each chunk to a query vector (chunks of another dimension, or embedded by another model
    than `embedding_model` when given, are left out)."""
    if not chunk_ids:
        return {}
    rows = conn.execute(
        "select c.id, 1 - (c.embedding <=> %(q)s) from public.chunks c "
        "where c.id = any(%(ids)s) and c.embedding_dims = vector_dims(%(q)s) "
        "and (%(model)s::text is null or c.embedding_model = %(model)s::text)",
        {"q": query_embedding, "ids": chunk_ids, "model": embedding_model},
    ).fetchall()
    return {int(r[0]): float(r[1]) for r in rows}


def term_statistics(
    conn: psycopg.Connection, *, query_text: str, params: HybridParams | None = None
) -> dict[str, tuple[int, float]]:
    """Per query term: (chunks containing it, its idf), as hybrid_search's full-text leg weighs it
    (with `params`' common-term knobs; None: the SQL defaults)."""
    if not query_text.strip():
        return {}
    args = {"query_text": query_text, **(params.sql_args(TERMS) if params else {})}
    named = sql.SQL(", ").join(
        sql.SQL("{} => {}").format(sql.Identifier(name), sql.Placeholder(name)) for name in args
    )
    statement = sql.SQL("select terms from public.hybrid_search_terms({})").format(named)
    row = conn.execute(statement, args).fetchone()
    return {t["lexeme"]: (int(t["df"]), float(t["idf"])) for t in (row[0] if row else [])}
