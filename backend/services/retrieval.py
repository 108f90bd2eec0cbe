"""The retrieval pipeline shared by /search, /chat and the CLI: prefetch -> rerank -> dynamic top-k."""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from backend.auth.identity import Identity
from backend.confidence.answerability import Fusion
from backend.confidence.assess import assess, load_score_policy
from backend.confidence.policy import POLICIES_DIR
from backend.config import Settings
from backend.db.database import Database
from backend.db.repositories import retrieval as retrieval_repo
from backend.embeddings import Embedder
from backend.embeddings.query_cache import QueryEmbeddings
from backend.errors import InvalidInput
from backend.rerank import HeuristicReranker, Reranker
from backend.retrieval.filters import compile_filter
from backend.retrieval.params import HybridParams, Mode
from backend.retrieval.rerank import candidate_features, diversify, dynamic_top_k, policy_scores
from backend.retrieval.rerank_policy import RERANK_POLICIES_DIR, load_rerank_policy
from backend.retrieval.scoring import chunk_score
from backend.retrieval.where_builder import WhereBuilder
from backend.search.diagnostics import (
    ConfidenceStage,
    PrefetchStage,
    SearchDiagnostics,
    SearchParameters,
    SearchStages,
    StageOut,
)
from backend.search.types import ScoredChunk, SearchRequest, SearchResult
from backend.search.where_diagnostics import WhereDiagnostics
from backend.services.reranking import apply_reranker, choose_reranker, restore_policy_order
from backend.services.result_scores import at_least, score_diagnostics, score_without_vectors
from backend.telemetry import Metrics
from backend.text import clean_query, query_terms

__all__ = ["RetrievalService", "log_search_done"]

logger = logging.getLogger(__name__)


class RetrievalService:
    """Three-stage retrieval over the SQL functions."""

    def __init__(
        self,
        db: Database,
        embedder: Embedder,
        settings: Settings,
        *,
        rerankers: Mapping[str, Reranker] | None = None,
        metrics: Metrics | None = None,
        where: WhereBuilder | None = None,
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.settings = settings
        self.metrics = metrics or Metrics()
        self.rerankers: Mapping[str, Reranker] = rerankers or {"heuristic": HeuristicReranker()}
        self.query_embeddings = QueryEmbeddings(
            embedder, self.metrics, size=settings.query_embedding_cache_size
        )
        self.seed_policy = load_rerank_policy("v1")  # the shipped seed formula (see seed_score)
        self.rerank_policy = load_rerank_policy(
            settings.rag_rerank_policy, settings.rag_rerank_policies_dir or RERANK_POLICIES_DIR
        )
        fitted_with = self.rerank_policy.embedding_model
        if fitted_with and fitted_with != embedder.model_id:
            logger.warning(
                "rerank policy %s was fitted with %s; this service embeds with %s: rankings and the "
                "dynamic cut may differ (fit one: python -m bench.rerank --fit-version vN)",
                self.rerank_policy.name,
                fitted_with,
                embedder.model_id,
            )
        self.policy = load_score_policy(
            settings.score_policy_version, settings.score_policies_dir or POLICIES_DIR
        )
        # What the candidates' RRF ranks came from: the answerability score re-fuses their leg ranks.
        self.fusion = Fusion(settings.rag_rrf_k, settings.rag_full_text_weight, settings.rag_semantic_weight)
        self.params = HybridParams.from_settings(settings)
        if where is None:
            from backend.services.where import build_where_builder  # the service's own composition

            where = build_where_builder(settings, db)
        self.where = where

    def search(self, request: SearchRequest, *, identity: Identity) -> SearchResult:
        """The request's filters plus what infer_filters reads in the query (WhereBuilder), then the three
        stages; when inferred filters leave nothing, once more without them (relax)."""
        question = clean_query(request.query)
        infer = request.infer_filters and len(question) <= self.settings.max_query_chars
        plan = self.where.plan(question, request.filters, infer=infer, identity=identity)
        relax = self.settings.where_relax_enabled if request.relax is None else request.relax
        where = WhereDiagnostics.from_plan(plan, infer=request.infer_filters, relax_enabled=relax)
        scoped = dataclasses.replace(request, query=plan.query, filters=plan.effective or None)
        result = self._search_once(scoped, identity=identity)
        if plan.applied and relax and result.diagnostics.matched_count == 0:
            unscoped = dataclasses.replace(request, query=question, filters=plan.user or None)
            result = self._search_once(unscoped, identity=identity)
            where.mark_relaxed(first_count=0)
        result.diagnostics.where = where
        return result

    def _search_once(self, request: SearchRequest, *, identity: Identity) -> SearchResult:
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
        filters = compile_filter(request.filters, s.metadata_whitelist, max_size=s.filter_max_size)
        reranker = choose_reranker(self.rerankers, request.reranker, s.rerank_default)
        terms = query_terms(query)
        mode = self._mode(request.mode, terms)
        params = self.params.for_mode(mode)
        timings: dict[str, float] = {}

        t0 = time.perf_counter()
        embedding = (
            self.query_embeddings.embed(query, scope=identity.cache_scope) if mode != "fulltext" else None
        )
        timings["embed_ms"] = _ms(t0)

        prefetch_k = max(request.prefetch_k or s.rag_prefetch_k, top_k_max)
        t0 = time.perf_counter()
        rows, chunk_totals, term_stats = self._prefetch(
            identity, mode, " ".join(terms), embedding, prefetch_k, filters, params
        )
        timings["prefetch_ms"] = _ms(t0)
        self.metrics.observe_stage("sql", timings["prefetch_ms"] / 1000)

        t0 = time.perf_counter()
        candidates = self._rerank(rows, query, terms, _idfs(term_stats), mode)
        candidates, rerank_out = apply_reranker(
            reranker, query, candidates, top_n=s.rerank_top_n, metrics=self.metrics
        )
        timings["rerank_ms"] = _ms(t0)

        t0 = time.perf_counter()
        top_k_min = min(s.rag_top_k_min, top_k_max)
        ranked = self.diversify(candidates)
        if mode == "fulltext":
            score_without_vectors(self.db, self.embedder, identity, query, ranked)
        ranked, below = at_least(ranked, request.min_score)
        if request.dynamic:
            keep = self.dynamic_cut(ranked, top_k_min=top_k_min, top_k_max=top_k_max)
        else:
            keep = min(top_k_max, len(ranked))
        results = ranked[:keep]
        timings["cut_ms"] = _ms(t0)

        t0 = time.perf_counter()
        # Seed-formula policies (v1, v2) read final_score as an absolute strength on the seed's scale;
        # answerability policies (v3) read cosines, leg ranks and term coverage themselves.
        on_seed_scale = [dataclasses.replace(c, final_score=c.seed_score) for c in candidates]
        confidence = assess(
            on_seed_scale,
            self.policy,
            terms=terms,
            term_idfs=_idfs(term_stats),
            chunk_totals=chunk_totals,
            fusion=self.fusion,
            top_n=s.confidence_top_n,
        )
        timings["confidence_ms"] = _ms(t0)

        diagnostics = SearchDiagnostics(
            query=query,
            query_terms=terms,
            query_term_idfs=_idfs(term_stats),
            mode=mode,
            embedding_model=self.embedder.model_id if embedding is not None else None,
            parameters=SearchParameters(
                prefetch_k=prefetch_k,
                top_k_min=top_k_min,
                top_k_max=top_k_max,
                dynamic=request.dynamic,
                drop_ratio=self._drop_ratio_for(candidates),
                per_doc_cap=s.rag_per_doc_cap,
                min_similarity=params.min_similarity if mode == "vector" else None,
                rrf_k=params.rrf_k,
                full_text_weight=params.full_text_weight,
                semantic_weight=params.semantic_weight if mode != "fulltext" else 0.0,
                candidate_count=params.candidate_count,
                ef_search=params.ef_search,
                filtered_ef_search=params.filtered_ef_search,
                exact_scan_threshold=params.exact_scan_threshold,
                rerank_policy=self.rerank_policy.name,
                rerank_weights=self.rerank_policy.weights,
                rerank_similarity=self._similarity_source(mode),
                filters=filters,
            ),
            stages=SearchStages(
                prefetch=PrefetchStage(
                    count=len(rows),
                    ms=timings["prefetch_ms"],
                    embed_ms=timings["embed_ms"],
                    plan=(None if not rows else "index" if rows[0].get("scope_count") is None else "exact"),
                    scope_count=rows[0].get("scope_count") if rows else None,
                ),
                rerank=StageOut(count=len(candidates), ms=timings["rerank_ms"]),
                top_k=StageOut(count=len(results), ms=timings["cut_ms"]),
                confidence=ConfidenceStage(
                    parents=confidence["parents_considered"], ms=timings["confidence_ms"]
                ),
            ),
            confidence=confidence,
            total_ms=round(sum(timings.values()), 3),
            reranker=rerank_out,
        )
        diagnostics.matched_count = len(rows)
        diagnostics.scores = score_diagnostics(candidates, request.min_score, below)
        if not results:
            diagnostics.empty_reason = "min_score" if below else "filter" if filters else "no_candidates"
        return SearchResult(
            query, mode, results, candidates, diagnostics, confidence, embedding, term_stats, rerank_out.used
        )

    def rescore(
        self, search: SearchResult, chunks: Sequence[ScoredChunk], *, identity: Identity
    ) -> list[ScoredChunk]:
        """`chunks` scored against `search`'s question, on the scale of its own candidates, so one rerank
        can order chunks that other searches found (gap queries; evidence-retention.md §四 Step 2).

        A chunk the question's own search ranked keeps that score. Another gets its cosine to the
        question and its coverage of the question's terms; it has no rank in the question's legs.
        Web evidence brings its cosine along (it has no row to compute it from).
        """
        own = {c.chunk_id: c for c in search.candidates}
        foreign = [c for c in chunks if c.chunk_id not in own]
        stored = [c.chunk_id for c in foreign if c.kind == "local"]
        cosines: dict[int, float] = {
            c.chunk_id: c.similarity for c in foreign if c.kind == "web" and c.similarity is not None
        }
        if stored and search.embedding is not None:
            with self.db.as_user(identity, read_only=True, replica=True) as conn:
                cosines |= retrieval_repo.similarities(
                    conn, chunk_ids=stored, query_embedding=search.embedding
                )
        rows = [_as_row(c, similarity=cosines.get(c.chunk_id)) for c in foreign]
        terms = search.diagnostics.query_terms
        scored = self._rerank(rows, search.query, terms, _idfs(search.term_stats), search.mode)
        if search.reranker != "heuristic" and scored:
            # The question's own chunks carry model scores: the others are scored by the same model (a
            # cross-encoder's score is absolute per query and text), or, if it fails now, every chunk
            # goes back to the policy's scores so that one scale orders them all.
            model = self.rerankers[search.reranker]
            scored, out = apply_reranker(model, search.query, scored, top_n=len(scored), metrics=self.metrics)
            if out.fallback:
                own = {k: dataclasses.replace(c) for k, c in own.items()}
                restore_policy_order(list(own.values()))
            else:
                rescored = {c.chunk_id: c for c in scored}
                return [own.get(c.chunk_id) or rescored[c.chunk_id] for c in chunks]
        if self.rerank_policy.output != "softmax":
            rescored = {c.chunk_id: c for c in scored}
            return [own.get(c.chunk_id) or rescored[c.chunk_id] for c in chunks]
        # A share among the foreign chunks alone would not compare with the question's own shares, and
        # a share on the candidates' scale alone exceeds 1 when a foreign chunk outranks them all (a
        # web passage that answers what the documents cannot): every chunk returned gets its share
        # among the question's candidates and the foreign chunks together, exp(logit) / sum(exp), so
        # the order is the logits' and every score stays in [0, 1].
        logits = {c.chunk_id: c.rerank_score for c in search.candidates}
        logits |= {c.chunk_id: c.rerank_score for c in scored}
        top = max(logits.values(), default=0.0)
        total = sum(math.exp(v - top) for v in logits.values()) or 1.0
        shared = {
            c.chunk_id: dataclasses.replace(c, final_score=math.exp(c.rerank_score - top) / total)
            for c in [*(own[c.chunk_id] for c in chunks if c.chunk_id in own), *scored]
        }
        return [shared[c.chunk_id] for c in chunks]

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
        with self.db.as_user(identity, snapshot=True, replica=True) as conn:
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

    @property
    def drop_ratio(self) -> float:
        """The dynamic cut's ratio: RAG_SIMILARITY_DROP_RATIO, else the rerank policy's calibrated one."""
        return self.settings.rag_similarity_drop_ratio or self.rerank_policy.drop_ratio

    def _drop_ratio_for(self, ranked: Sequence[ScoredChunk]) -> float:
        """Model relevance scores have their own scale, so their cut has its own ratio."""
        model_scored = bool(ranked) and ranked[0].scored_by != "heuristic"
        return self.settings.rerank_drop_ratio if model_scored else self.drop_ratio

    def dynamic_cut(self, ranked: Sequence[ScoredChunk], *, top_k_min: int, top_k_max: int) -> int:
        """Stage 3: how many of `ranked` to keep (results at least drop_ratio as good as the best)."""
        return dynamic_top_k(
            [c.final_score for c in ranked],
            top_k_min=top_k_min,
            top_k_max=top_k_max,
            drop_ratio=self._drop_ratio_for(ranked),
        )

    def diversify(self, ranked: list[ScoredChunk]) -> list[ScoredChunk]:
        """No duplicate texts, and at most RAG_PER_DOC_CAP chunks of a document ahead of the others.

        Applied to the results only: the candidates keep every chunk, since confidence counts how
        many chunks of a document were found. It reorders chunks of one document behind other
        documents, never documents among themselves, so a document's first (best) rank is kept.
        """
        return diversify(
            ranked,
            per_doc_cap=self.settings.rag_per_doc_cap,
            document=lambda c: c.document_id,
            content=lambda c: c.content_hash,
        )

    def _rerank(
        self,
        rows: list[dict[str, Any]],
        query: str,
        terms: list[str],
        term_idf: dict[str, float],
        mode: Mode,
    ) -> list[ScoredChunk]:
        chunks = [
            ScoredChunk(
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
                full_text_score=r.get("full_text_score"),
                kind=r.get("kind", "local"),
                url=r.get("url"),
                provider=r.get("provider"),
                fetched_at=r.get("fetched_at"),
                score=chunk_score(r["similarity"]),
            )
            for r in rows
        ]
        policy = self.rerank_policy
        features = candidate_features(chunks, terms, self._similarity_source(mode), query, term_idf)
        finals = policy_scores(features, policy)
        seed = policy_scores(features, self.seed_policy)
        for chunk, f, final, seed_score in zip(chunks, features, finals, seed, strict=True):
            chunk.seed_score = seed_score
            chunk.keyword_coverage = f["keyword_coverage"]
            chunk.contributions = {name: w * f[name] for name, w in policy.weights.items()}
            chunk.rerank_score = sum(chunk.contributions.values())
            chunk.final_score = final
        # Stable on ties: the prefetch order (RRF or cosine) breaks them.
        return sorted(chunks, key=lambda c: -c.final_score)


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
        "kind": chunk.kind,
        "url": chunk.url,
        "provider": chunk.provider,
        "fetched_at": chunk.fetched_at,
    }


def _idfs(term_stats: dict[str, tuple[int, float]]) -> dict[str, float]:
    return {term: idf for term, (_df, idf) in term_stats.items()}


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)
