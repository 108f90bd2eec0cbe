"""The search every caller runs (/search, /chat, deep research, the CLI): the WhereBuilder's filter, then
the stages in order - embed, prefetch, candidates (rerank), cut, confidence - and the report."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping, Sequence

import numpy as np

from backend.auth.identity import Identity
from backend.confidence.assess import assess
from backend.config import Settings
from backend.db.database import Database
from backend.db.repositories import retrieval as retrieval_repo
from backend.db.repositories.retrieval import Prefetched
from backend.embeddings import Embedder
from backend.embeddings.query_cache import QueryEmbeddings
from backend.errors import InvalidInput
from backend.rerank import HeuristicReranker, Reranker
from backend.retrieval.filters import compile_filter
from backend.retrieval.params import Mode
from backend.search.candidates import idfs, score_candidates, similarity_source
from backend.search.cut import CutRules, cut
from backend.search.policies import SearchPolicies
from backend.search.report import SearchPlan, StageResults, search_report
from backend.search.reranking import apply_reranker, choose_reranker
from backend.search.rescore import foreign_chunks, rescore
from backend.search.result_scores import score_without_vectors
from backend.search.types import ScoredChunk, SearchRequest, SearchResult
from backend.telemetry import Metrics
from backend.text import clean_query, query_terms
from backend.where.builder import WhereBuilder
from backend.where.diagnostics import WhereDiagnostics

logger = logging.getLogger(__name__)


class RetrievalService:
    """Search as one caller: row-level security decides which chunks it can find."""

    def __init__(
        self,
        db: Database,
        embedder: Embedder,
        settings: Settings,
        *,
        policies: SearchPolicies,
        where: WhereBuilder,
        rerankers: Mapping[str, Reranker] | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.settings = settings
        self.policies = policies
        self.where = where
        self.metrics = metrics or Metrics()
        self.rerankers: Mapping[str, Reranker] = rerankers or {"heuristic": HeuristicReranker()}
        self.query_embeddings = QueryEmbeddings(
            embedder, self.metrics, size=settings.query_embedding_cache_size
        )
        self.cut_rules = CutRules.of(settings, policies.rerank)

    def search(self, request: SearchRequest, *, identity: Identity) -> SearchResult:
        """The request's filters plus what infer_filters reads in the query (WhereBuilder), then the
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

    def unsearched(self, request: SearchRequest, *, identity: Identity) -> SearchResult:
        """The request's search without reading the documents: its plan and query embedding, no
        candidates, the confidence of nothing found. What an answer from the web alone stands on when
        the search of the documents ran out of time (backend/search/web.py)."""
        return self._search_once(request, identity=identity, read=False)

    def rescore(
        self, search: SearchResult, chunks: Sequence[ScoredChunk], *, identity: Identity
    ) -> list[ScoredChunk]:
        """`chunks` scored against `search`'s question on the scale of its own candidates (rescore.py);
        the stored ones' cosines are read as `identity`."""
        foreign = foreign_chunks(search, chunks)
        stored = [c.chunk_id for c in foreign if c.kind == "local"]
        cosines = {c.chunk_id: c.similarity for c in foreign if c.kind == "web" and c.similarity is not None}
        if stored and search.embedding is not None:
            with self.db.as_user(identity, read_only=True, replica=True) as conn:
                cosines |= retrieval_repo.similarities(
                    conn, chunk_ids=stored, query_embedding=search.embedding
                )
        return rescore(
            search,
            chunks,
            cosines=cosines,
            policies=self.policies,
            similarity=similarity_source(search.mode, self.settings),
            model=self.rerankers[search.reranker] if search.reranker != "heuristic" else None,
            metrics=self.metrics,
        )

    def dynamic_cut(self, ranked: Sequence[ScoredChunk], *, top_k_min: int, top_k_max: int) -> int:
        """How many of `ranked` the dynamic cut keeps (results at least drop_ratio as good as the best)."""
        return self.cut_rules.keep(ranked, top_k_min=top_k_min, top_k_max=top_k_max)

    def _plan(self, request: SearchRequest) -> SearchPlan:
        """The request checked against the limits and merged with the settings (InvalidInput: a 422)."""
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
        return SearchPlan(
            query=query,
            terms=terms,
            mode=mode,
            filters=filters,
            params=self.policies.params.for_mode(mode),
            prefetch_k=max(request.prefetch_k or s.rag_prefetch_k, top_k_max),
            top_k_max=top_k_max,
            dynamic=request.dynamic,
            min_score=request.min_score,
            similarity=similarity_source(mode, s),
            reranker=reranker,
        )

    def _search_once(self, request: SearchRequest, *, identity: Identity, read: bool = True) -> SearchResult:
        """The stages in order, each timed: embed, prefetch, candidates and the reranker, cut, confidence."""
        plan = self._plan(request)
        timings: dict[str, float] = {}

        t0 = time.perf_counter()
        embedding = (
            self.query_embeddings.embed(plan.query, scope=identity.cache_scope)
            if plan.mode != "fulltext"
            else None
        )
        timings["embed_ms"] = _ms(t0)

        t0 = time.perf_counter()
        # read=False: nothing is read from the documents (unsearched)
        prefetched = self._prefetch(plan, embedding, identity) if read else Prefetched([], {}, {})
        timings["prefetch_ms"] = _ms(t0)
        self.metrics.observe_stage("sql", timings["prefetch_ms"] / 1000)

        t0 = time.perf_counter()
        term_idf = idfs(prefetched.term_stats)
        candidates = score_candidates(
            prefetched.rows,
            query=plan.query,
            terms=plan.terms,
            term_idf=term_idf,
            similarity=plan.similarity,
            policies=self.policies,
        )
        candidates, rerank_out = apply_reranker(
            plan.reranker, plan.query, candidates, top_n=self.settings.rerank_top_n, metrics=self.metrics
        )
        timings["rerank_ms"] = _ms(t0)

        t0 = time.perf_counter()
        ranked = self.cut_rules.diversify(candidates)
        if plan.mode == "fulltext":
            score_without_vectors(self.db, self.embedder, identity, plan.query, ranked)
        results, below = cut(
            ranked, self.cut_rules, min_score=plan.min_score, dynamic=plan.dynamic, top_k_max=plan.top_k_max
        )
        timings["cut_ms"] = _ms(t0)

        t0 = time.perf_counter()
        # Seed-formula policies (v1, v2) read final_score as an absolute strength on the seed's scale;
        # answerability policies (v3) read cosines, leg ranks and term coverage themselves.
        confidence = assess(
            [dataclasses.replace(c, final_score=c.seed_score) for c in candidates],
            self.policies.score,
            terms=plan.terms,
            term_idfs=term_idf,
            chunk_totals=prefetched.chunk_totals,
            fusion=self.policies.fusion,
            top_n=self.settings.confidence_top_n,
        )
        timings["confidence_ms"] = _ms(t0)

        out = StageResults(
            prefetched=prefetched,
            candidates=candidates,
            results=results,
            below_min_score=below,
            confidence=confidence,
            reranker=rerank_out,
            embedding_model=self.embedder.model_id if embedding is not None else None,
            timings=timings,
        )
        diagnostics = search_report(plan, out, rules=self.cut_rules, policies=self.policies)
        return SearchResult(
            plan.query,
            plan.mode,
            results,
            candidates,
            diagnostics,
            confidence,
            embedding,
            prefetched.term_stats,
            rerank_out.used,
        )

    def _prefetch(self, plan: SearchPlan, embedding: np.ndarray | None, identity: Identity) -> Prefetched:
        """Stage 1: one repository call in one snapshot."""
        with self.db.as_user(identity, snapshot=True, replica=True) as conn:
            return retrieval_repo.prefetch(
                conn,
                leg="vector" if plan.mode == "vector" else "hybrid",
                query_text=" ".join(plan.terms),
                query_embedding=embedding,
                match_count=plan.prefetch_k,
                filter=plan.filters,
                embedding_model=self.embedder.model_id if embedding is not None else None,
                params=plan.params,
            )

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


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)
