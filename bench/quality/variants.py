"""The retrieval variants bench.quality compares, each a function (query, query vector) -> ranked chunks.

All of them read the same scratch database, filled once by the product's IngestionService, and use
the same query vector, so differences come from ranking alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import bm25s
import numpy as np
import psycopg

from backend.auth import LOCAL_IDENTITY
from backend.composition import Services
from backend.db.repositories import retrieval as retrieval_repo
from backend.errors import InvalidInput
from backend.retrieval.params import HybridParams, Mode
from backend.search.policies import SearchPolicies
from backend.search.service import RetrievalService
from backend.search.types import SearchRequest
from backend.text import query_terms
from bench.common import supabase_ref

TOP_K = 10
VARIANTS = ("pipeline", "pipeline_rrf", "hybrid_norerank", "vector", "fulltext", "supabase_ref", "bm25")
DESCRIPTIONS = {
    "pipeline": "RetrievalService.search, default settings (hybrid prefetch + rerank), dynamic=False",
    "pipeline_rrf": "the same with rag_rerank_similarity='rrf'",
    "hybrid_norerank": "public.hybrid_search order (match_count 10), no rerank",
    "vector": "public.match_documents, min_similarity -1",
    "fulltext": "public.hybrid_search with semantic_weight 0 (our full-text leg)",
    "supabase_ref": "the Supabase guide's hybrid_search on the raw query (english FTS, AND)",
    "bm25": "bm25s over chunks.content_tokens, query = backend.text.query_terms",
}

Runner = Callable[[str, np.ndarray], list[str]]  # (raw query, query vector) -> document ids per ranked chunk


@dataclass
class ChunkIndex:
    """public.chunks as the in-memory baselines see it: id -> document external_id, tokens."""

    ids: list[int]
    external_ids: list[str]
    tokens: list[list[str]]
    doc_of: dict[int, str] = field(default_factory=dict)

    @classmethod
    def load(cls, conn: psycopg.Connection) -> ChunkIndex:
        rows = conn.execute(
            "select c.id, d.external_id, c.content_tokens from chunks c "
            "join documents d on d.id = c.document_id order by c.id"
        ).fetchall()
        index = cls([r[0] for r in rows], [r[1] for r in rows], [r[2].split() for r in rows])
        index.doc_of = dict(zip(index.ids, index.external_ids, strict=True))
        return index


@dataclass
class Diagnostics:
    """Per-query facts that explain the metrics (filled while the variants run)."""

    candidate_docs: list[list[str]] = field(default_factory=list)  # pipeline's prefetched candidates
    fulltext_rows: list[int] = field(default_factory=list)
    supabase_fts_rows: list[int] = field(default_factory=list)  # filled outside the timed runs
    query_term_counts: list[int] = field(default_factory=list)  # filled outside the timed runs


def build_runners(
    services: Services, ref_conn: psycopg.Connection, chunks: ChunkIndex, diag: Diagnostics
) -> dict[str, Runner]:
    """One runner per variant, sharing the services' pool and embedder (ref_conn: supabase_ref's)."""
    s = services.settings
    model = services.embedder.model_id
    params = HybridParams.from_settings(s)
    rrf_settings = s.model_copy(update={"rag_rerank_similarity": "rrf"})
    rrf_service = RetrievalService(
        services.db,
        services.embedder,
        rrf_settings,
        policies=SearchPolicies.load(rrf_settings, embedder=services.embedder),
        where=services.retrieval.where,
    )
    bm25 = bm25s.BM25()
    bm25.index(chunks.tokens, show_progress=False)

    def pipeline_with(service: RetrievalService, record: bool) -> Runner:
        def run(query: str, _vector: np.ndarray) -> list[str]:
            try:
                result = service.search(
                    SearchRequest(query, top_k=TOP_K, dynamic=False), identity=LOCAL_IDENTITY
                )
            except InvalidInput:
                if record:
                    diag.candidate_docs.append([])
                return []
            if record:
                diag.candidate_docs.append([c.external_id for c in result.candidates])
            return [c.external_id for c in result.results]

        return run

    def hybrid(query: str, vector: np.ndarray, *, mode: Mode) -> list[dict[str, Any]]:
        with services.pool.connection() as conn:
            return retrieval_repo.hybrid_search(
                conn,
                query_text=" ".join(query_terms(query)),
                query_embedding=vector if mode == "hybrid" else None,
                match_count=TOP_K,
                filter={},
                embedding_model=model if mode == "hybrid" else None,
                params=params.for_mode(mode),
            )

    def hybrid_norerank(query: str, vector: np.ndarray) -> list[str]:
        return [r["external_id"] for r in hybrid(query, vector, mode="hybrid")]

    def fulltext(query: str, vector: np.ndarray) -> list[str]:
        rows = hybrid(query, vector, mode="fulltext")
        diag.fulltext_rows.append(len(rows))
        return [r["external_id"] for r in rows]

    def vector_only(query: str, vector: np.ndarray) -> list[str]:
        with services.pool.connection() as conn:
            rows = retrieval_repo.match_documents(
                conn,
                query_embedding=vector,
                match_count=TOP_K,
                filter={},
                embedding_model=model,
                params=dataclasses.replace(params, min_similarity=-1.0),
            )
        return [r["external_id"] for r in rows]

    def supabase(query: str, vector: np.ndarray) -> list[str]:
        ids = supabase_ref.search(ref_conn, query_text=query, query_embedding=vector, match_count=TOP_K)
        return [chunks.doc_of[i] for i in ids]

    def bm25_run(query: str, _vector: np.ndarray) -> list[str]:
        terms = query_terms(query)
        if not terms:
            return []
        docs, scores = bm25.retrieve([terms], k=min(TOP_K, len(chunks.ids)), show_progress=False)
        # bm25s returns k rows even when no chunk shares a term; those (score 0) are not matches.
        return [chunks.external_ids[i] for i, sc in zip(docs[0], scores[0], strict=True) if sc > 0]

    return {
        "pipeline": pipeline_with(services.retrieval, record=True),
        "pipeline_rrf": pipeline_with(rrf_service, record=False),
        "hybrid_norerank": hybrid_norerank,
        "vector": vector_only,
        "fulltext": fulltext,
        "supabase_ref": supabase,
        "bm25": bm25_run,
    }
