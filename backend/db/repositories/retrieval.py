"""Calls of the retrieval functions in sql/ (by name, with named parameters)."""

from __future__ import annotations

from typing import Any

import numpy as np
import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from backend.errors import EmbeddingModelMismatch


def hybrid_search(
    conn: psycopg.Connection,
    *,
    query_text: str | None,
    query_embedding: np.ndarray | None,
    match_count: int,
    full_text_weight: float,
    semantic_weight: float,
    rrf_k: int,
    filter: dict[str, Any],
    embedding_model: str | None,
    candidate_count: int | None,
    ef_search: int,
    filtered_ef_search: int,
) -> list[dict[str, Any]]:
    """Stage 1 prefetch: public.hybrid_search (full-text OR + HNSW, fused by RRF)."""
    return _call(
        conn,
        """
        select * from hybrid_search(
            query_text => %(query_text)s, query_embedding => %(query_embedding)s,
            match_count => %(match_count)s, full_text_weight => %(full_text_weight)s,
            semantic_weight => %(semantic_weight)s, rrf_k => %(rrf_k)s, filter => %(filter)s,
            query_embedding_model => %(embedding_model)s, candidate_count => %(candidate_count)s,
            ef_search => %(ef_search)s, filtered_ef_search => %(filtered_ef_search)s)
        """,
        {
            "query_text": query_text,
            "query_embedding": query_embedding,
            "match_count": match_count,
            "full_text_weight": full_text_weight,
            "semantic_weight": semantic_weight,
            "rrf_k": rrf_k,
            "filter": Jsonb(filter),
            "embedding_model": embedding_model,
            "candidate_count": candidate_count,
            "ef_search": ef_search,
            "filtered_ef_search": filtered_ef_search,
        },
    )


def match_documents(
    conn: psycopg.Connection,
    *,
    query_embedding: np.ndarray,
    match_count: int,
    min_similarity: float,
    filter: dict[str, Any],
    embedding_model: str | None,
    ef_search: int,
    filtered_ef_search: int,
) -> list[dict[str, Any]]:
    """Vector-only prefetch: public.match_documents (cosine, min_similarity floor)."""
    return _call(
        conn,
        """
        select * from match_documents(
            query_embedding => %(query_embedding)s, match_count => %(match_count)s,
            min_similarity => %(min_similarity)s, filter => %(filter)s,
            query_embedding_model => %(embedding_model)s, ef_search => %(ef_search)s,
            filtered_ef_search => %(filtered_ef_search)s)
        """,
        {
            "query_embedding": query_embedding,
            "match_count": match_count,
            "min_similarity": min_similarity,
            "filter": Jsonb(filter),
            "embedding_model": embedding_model,
            "ef_search": ef_search,
            "filtered_ef_search": filtered_ef_search,
        },
    )


def begin_read_snapshot(conn: psycopg.Connection) -> None:
    """Make the rest of this transaction read one consistent snapshot (first statement only)."""
    conn.execute("set transaction isolation level repeatable read, read only")


def chunk_counts(conn: psycopg.Connection, *, document_ids: list[Any]) -> dict[str, int]:
    """Total chunks of each document (the confidence score's document size)."""
    if not document_ids:
        return {}
    rows = conn.execute(
        "select document_id::text, count(*) from chunks where document_id = any(%s) group by 1",
        (list(set(document_ids)),),
    ).fetchall()
    return {r[0]: int(r[1]) for r in rows}


def _call(conn: psycopg.Connection, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    try:
        with conn.cursor(row_factory=dict_row) as cur:
            return cur.execute(sql, params).fetchall()
    except psycopg.errors.InvalidParameterValue as exc:
        if "does not match the stored chunks" in str(exc):
            hint = exc.diag.message_hint or ""
            raise EmbeddingModelMismatch(f"{exc.diag.message_primary}. {hint}".strip()) from exc
        raise
