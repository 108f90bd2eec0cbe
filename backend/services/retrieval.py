"""The retrieval pipeline shared by /search, /chat and the CLI: prefetch -> rerank -> dynamic top-k."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from backend.auth.identity import Identity
from backend.confidence.policy import POLICIES_DIR, load_policy
from backend.confidence.scoring import retrieval_confidence
from backend.config import Settings
from backend.db.database import Database
from backend.db.repositories import retrieval as retrieval_repo
from backend.embeddings import Embedder
from backend.errors import InvalidInput
from backend.retrieval.filters import to_containment
from backend.retrieval.params import HybridParams, Mode
from backend.retrieval.rerank import (
    RerankWeights,
    dynamic_top_k,
    final_score,
    keyword_coverage,
    starts_with_heading,
)
from backend.services.diagnostics import (
    ConfidenceStage,
    PrefetchStage,
    RerankWeightsOut,
    SearchDiagnostics,
    SearchParameters,
    SearchStages,
    StageOut,
)
from backend.text import clean_query, query_terms

logger = logging.getLogger(__name__)


@dataclass
class SearchRequest:
    query: str
    top_k: int | None = None
    mode: Mode | None = None
    dynamic: bool = True
    filters: dict[str, Any] | None = None
    prefetch_k: int | None = None  # candidates asked of the database; None: max(rag_prefetch_k, top_k)


@dataclass
class ScoredChunk:
    chunk_id: int
    document_id: uuid.UUID
    external_id: str
    title: str
    heading_path: list[str]
    position: int
    content: str
    content_hash: str
    metadata: dict[str, Any]
    content_tokens: str  # jieba tokens of title > headings + text, as indexed
    vector_rank: int | None
    full_text_rank: int | None
    rrf_score: float | None
    similarity: float | None  # cosine to the query (None in full-text mode)
    rerank_similarity: float = 0.0  # what entered the reranker as "similarity"
    keyword_coverage: float = 0.0
    structure_bonus: float = 0.0
    final_score: float = 0.0

    @property
    def heading(self) -> str:
        """The heading path for display, without a leading H1 that repeats the title."""
        path = self.heading_path[1:] if self.heading_path[:1] == [self.title] else self.heading_path
        return " > ".join(path)

    def why(self) -> dict[str, Any]:
        """The features that put this chunk where it is (stored with citations for audits)."""
        keys = (
            "vector_rank",
            "full_text_rank",
            "rrf_score",
            "similarity",
            "rerank_similarity",
            "keyword_coverage",
            "structure_bonus",
            "final_score",
        )
        return {k: _round(getattr(self, k)) for k in keys}


@dataclass
class SearchResult:
    query: str
    mode: Mode
    results: list[ScoredChunk]
    candidates: list[ScoredChunk]  # every prefetched chunk, reranked (results are a prefix)
    diagnostics: SearchDiagnostics
    confidence: dict[str, Any]  # overall-score-confidence.md, section 10
    embedding: np.ndarray | None = None  # the query vector (None in full-text mode)
    term_stats: dict[str, tuple[int, float]] = field(default_factory=dict)  # term -> (df, idf)


def _round(v: Any) -> Any:
    return round(v, 6) if isinstance(v, float) else v


class RetrievalService:
    """Three-stage retrieval over the SQL functions."""

    def __init__(self, db: Database, embedder: Embedder, settings: Settings) -> None:
        self.db = db
        self.embedder = embedder
        self.settings = settings
        self.weights = RerankWeights(
            settings.rag_rerank_similarity_weight,
            settings.rag_rerank_coverage_weight,
            settings.rag_structure_bonus,
        )
        self.policy = load_policy(settings.score_policy_version, settings.score_policies_dir or POLICIES_DIR)
        self.params = HybridParams.from_settings(settings)

    def search(self, request: SearchRequest, *, identity: Identity) -> SearchResult:
        """The three stages as `identity`: row-level security decides which chunks it can find."""
        s = self.settings
        query = clean_query(request.query)
        if not query:
            raise InvalidInput("query is empty")
        if len(query) > s.max_query_chars:
            raise InvalidInput(f"query has {len(query)} characters; the limit is {s.max_query_chars}")
        top_k_max = request.top_k or s.rag_top_k_max
        if not 1 <= top_k_max <= s.search_max_top_k:
            raise InvalidInput(f"top_k must be between 1 and {s.search_max_top_k} (SEARCH_MAX_TOP_K)")
        filters = to_containment(request.filters, s.metadata_whitelist)
        terms = query_terms(query)
        mode = self._mode(request.mode, terms)
        params = self.params.for_mode(mode)
        timings: dict[str, float] = {}

        t0 = time.perf_counter()
        embedding = self.embedder.embed_query(query) if mode != "fulltext" else None
        timings["embed_ms"] = _ms(t0)

        prefetch_k = max(request.prefetch_k or s.rag_prefetch_k, top_k_max)
        t0 = time.perf_counter()
        rows, chunk_totals, term_stats = self._prefetch(
            identity, mode, " ".join(terms), embedding, prefetch_k, filters, params
        )
        timings["prefetch_ms"] = _ms(t0)

        t0 = time.perf_counter()
        candidates = self._rerank(rows, terms, mode)
        timings["rerank_ms"] = _ms(t0)

        t0 = time.perf_counter()
        top_k_min = min(s.rag_top_k_min, top_k_max)
        if request.dynamic:
            keep = dynamic_top_k(
                [c.final_score for c in candidates],
                top_k_min=top_k_min,
                top_k_max=top_k_max,
                drop_ratio=s.rag_similarity_drop_ratio,
            )
        else:
            keep = min(top_k_max, len(candidates))
        results = candidates[:keep]
        timings["cut_ms"] = _ms(t0)

        t0 = time.perf_counter()
        confidence = retrieval_confidence(candidates, chunk_totals, self.policy, top_n=s.confidence_top_n)
        timings["confidence_ms"] = _ms(t0)

        diagnostics = SearchDiagnostics(
            query=query,
            query_terms=terms,
            mode=mode,
            embedding_model=self.embedder.model_id if embedding is not None else None,
            parameters=SearchParameters(
                prefetch_k=prefetch_k,
                top_k_min=top_k_min,
                top_k_max=top_k_max,
                dynamic=request.dynamic,
                drop_ratio=s.rag_similarity_drop_ratio,
                min_similarity=params.min_similarity if mode == "vector" else None,
                rrf_k=params.rrf_k,
                full_text_weight=params.full_text_weight,
                semantic_weight=params.semantic_weight if mode != "fulltext" else 0.0,
                candidate_count=params.candidate_count,
                ef_search=params.ef_search,
                filtered_ef_search=params.filtered_ef_search,
                rerank_similarity=self._similarity_source(mode),
                rerank_weights=RerankWeightsOut(**asdict(self.weights)),
                filters=filters,
            ),
            stages=SearchStages(
                prefetch=PrefetchStage(
                    count=len(rows), ms=timings["prefetch_ms"], embed_ms=timings["embed_ms"]
                ),
                rerank=StageOut(count=len(candidates), ms=timings["rerank_ms"]),
                top_k=StageOut(count=len(results), ms=timings["cut_ms"]),
                confidence=ConfidenceStage(
                    parents=confidence["parents_considered"], ms=timings["confidence_ms"]
                ),
            ),
            confidence=confidence,
            total_ms=round(sum(timings.values()), 3),
        )
        return SearchResult(query, mode, results, candidates, diagnostics, confidence, embedding, term_stats)

    def rescore(
        self, search: SearchResult, chunks: Sequence[ScoredChunk], *, identity: Identity
    ) -> list[ScoredChunk]:
        """`chunks` scored against `search`'s question, on the scale of its own candidates, so one rerank
        can order chunks that other searches found (gap queries; evidence-retention.md §四 Step 2).

        A chunk the question's own search ranked keeps that score. Another gets its cosine to the
        question and its coverage of the question's terms; it has no rank in the question's legs.
        """
        own = {c.chunk_id: c for c in search.candidates}
        foreign = [c for c in chunks if c.chunk_id not in own]
        cosines: dict[int, float] = {}
        if foreign and search.embedding is not None:
            with self.db.as_user(identity, read_only=True) as conn:
                cosines = retrieval_repo.similarities(
                    conn, chunk_ids=[c.chunk_id for c in foreign], query_embedding=search.embedding
                )
        rows = [_as_row(c, similarity=cosines.get(c.chunk_id)) for c in foreign]
        rescored = {c.chunk_id: c for c in self._rerank(rows, search.diagnostics.query_terms, search.mode)}
        return [own.get(c.chunk_id) or rescored[c.chunk_id] for c in chunks]

    def _mode(self, requested: Mode | None, terms: list[str]) -> Mode:
        if requested == "fulltext":
            if not terms:
                raise InvalidInput("full-text mode needs at least one significant word in the query")
            return "fulltext"
        if requested == "vector":
            return "vector"
        if requested == "hybrid" or (requested is None and self.settings.rag_hybrid_enabled):
            return "hybrid" if terms else "vector"  # a query of stopwords only has no text leg
        return "vector"

    def _prefetch(
        self,
        identity: Identity,
        mode: Mode,
        query_text: str,
        embedding: np.ndarray | None,
        k: int,
        filters: dict[str, Any],
        params: HybridParams,
    ) -> tuple[list[dict[str, Any]], dict[str, int], dict[str, tuple[int, float]]]:
        """Stage 1 rows, the chunk count of each document they come from (for confidence), and the
        query terms' document frequency and idf (what the full-text leg weighed them with)."""
        model = self.embedder.model_id if embedding is not None else None
        # One snapshot for every read: a document deleted or re-ingested in between must not leave
        # rows whose document has no chunk count.
        with self.db.as_user(identity, snapshot=True) as conn:
            if mode == "vector":
                assert embedding is not None
                rows = retrieval_repo.match_documents(
                    conn,
                    query_embedding=embedding,
                    match_count=k,
                    filter=filters,
                    embedding_model=model,
                    params=params,
                )
            else:
                rows = retrieval_repo.hybrid_search(
                    conn,
                    query_text=query_text,
                    query_embedding=embedding,
                    match_count=k,
                    filter=filters,
                    embedding_model=model,
                    params=params,
                )
            totals = retrieval_repo.chunk_counts(conn, document_ids=[r["document_id"] for r in rows])
            term_stats = retrieval_repo.term_statistics(conn, query_text=query_text)
        return rows, totals, term_stats

    def _similarity_source(self, mode: Mode) -> str:
        if mode == "vector":
            return "cosine"
        if mode == "fulltext":
            return "full_text_score / best"
        return "cosine" if self.settings.rag_rerank_similarity == "cosine" else "rrf_score / best"

    def _rerank(self, rows: list[dict[str, Any]], terms: list[str], mode: Mode) -> list[ScoredChunk]:
        source = self._similarity_source(mode)
        best_rrf = max((r.get("rrf_score") or 0.0 for r in rows), default=0.0) or 1.0
        best_ft = max((r.get("full_text_score") or 0.0 for r in rows), default=0.0) or 1.0
        out = []
        for r in rows:
            chunk = ScoredChunk(
                chunk_id=r["id"],
                document_id=r["document_id"],
                external_id=r["external_id"],
                title=r["title"],
                heading_path=list(r["heading_path"] or []),
                position=r["position"],
                content=r["content"],
                content_hash=r["content_hash"],
                metadata=r["metadata"],
                content_tokens=r["content_tokens"],
                vector_rank=r.get("vector_rank"),
                full_text_rank=r.get("full_text_rank"),
                rrf_score=r.get("rrf_score"),
                similarity=r["similarity"],
            )
            if source == "cosine":
                chunk.rerank_similarity = chunk.similarity or 0.0
            elif source == "rrf_score / best":
                chunk.rerank_similarity = (chunk.rrf_score or 0.0) / best_rrf
            else:
                chunk.rerank_similarity = (r.get("full_text_score") or 0.0) / best_ft
            chunk.keyword_coverage = keyword_coverage(terms, chunk.content_tokens)
            heading = starts_with_heading(chunk.content)
            chunk.structure_bonus = self.weights.structure_bonus if heading else 0.0
            chunk.final_score = final_score(
                chunk.rerank_similarity, chunk.keyword_coverage, heading, self.weights
            )
            out.append(chunk)
        # Stable on ties: the prefetch order (RRF or cosine) breaks them.
        return sorted(out, key=lambda c: -c.final_score)


def log_search_done(result: SearchResult) -> None:
    """One INFO line per /search request: what ran and how long, never document text."""
    d = result.diagnostics
    logger.info(
        "[search] retrieval done | mode=%s | top_k=%d | prefetch=%d | chunks=%d | dynamic=%s | "
        "filters=%s | confidence=%s | %.0fms",
        result.mode,
        d.parameters.top_k_max,
        d.stages.prefetch.count,
        len(result.results),
        d.parameters.dynamic,
        "yes" if d.parameters.filters else "no",
        result.confidence.get("confidence_level"),
        d.total_ms,
    )


def _as_row(chunk: ScoredChunk, *, similarity: float | None) -> dict[str, Any]:
    """A chunk as a prefetch row of another query: its text and place, a new cosine, no ranks."""
    return {
        "id": chunk.chunk_id,
        "document_id": chunk.document_id,
        "external_id": chunk.external_id,
        "title": chunk.title,
        "heading_path": chunk.heading_path,
        "position": chunk.position,
        "content": chunk.content,
        "content_hash": chunk.content_hash,
        "metadata": chunk.metadata,
        "content_tokens": chunk.content_tokens,
        "similarity": similarity,
    }


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)
