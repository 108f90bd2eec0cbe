"""One search: prefetch, rerank (the policy and the model rerankers), the dynamic cut, the SQL
functions' knobs.

A section of backend.config.Settings: its fields keep their environment names (the field name in
upper case)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, SecretStr


class SearchSettings(BaseModel):
    # --- three-stage retrieval (seed: three-stage-retrieval.md) ------------------------------
    rag_prefetch_k: int = Field(
        default=30,
        ge=1,
        le=1000,
        description="Candidates the reranker scores (seed: 15). 30 finds the gold document for 0.2-0.25% "
        "more development questions at no loss elsewhere (docs/benchmarks.md, bench.rerank).",
    )
    rag_min_similarity: float = Field(default=0.3, ge=-1.0, le=1.0)
    rag_top_k_max: int = Field(default=5, ge=1, le=1000)
    rag_top_k_min: int = Field(default=1, ge=0)
    rag_similarity_drop_ratio: float | None = Field(
        default=None,
        description="Dynamic top-k: keep results whose final score is at least best x this. None: the "
        "rerank policy's calibrated value.",
    )
    rag_hybrid_enabled: bool = True
    rag_rrf_k: int = Field(default=60, ge=1)
    rag_full_text_weight: float = 1.0
    rag_semantic_weight: float = 1.0
    rag_hnsw_ef_search: int = Field(
        default=200,
        ge=1,
        le=1000,
        description="hnsw.ef_search of an unfiltered search: 200 reaches recall@10 0.98 at 1M chunks "
        "(0.947 at 100; docs/benchmarks.md, issue 31).",
    )
    rag_hnsw_filtered_ef_search: int = Field(
        default=200, ge=1, le=1000, description="hnsw.ef_search when a metadata filter is given."
    )
    rag_candidate_count: int | None = Field(
        default=None, ge=1, le=10000, description="Rows per leg before fusion; None: max(4 x prefetch, 40)."
    )
    rag_common_term_ratio: float = Field(
        default=0.1,
        ge=0.0,
        le=1.0,
        description="A term in more than max(ratio x chunks, RAG_COMMON_TERM_MIN_DF) chunks is left out of "
        "the full-text match (it still scores the rows that match). sql/README.md.",
    )
    rag_common_term_min_df: int = Field(default=5000, ge=0, description="See RAG_COMMON_TERM_RATIO.")
    rag_match_df_budget: int = Field(
        default=2000,
        ge=1,
        description="The full-text match uses the rarest terms while their document frequencies add up "
        "to at most this (bounds the rows the leg scores). sql/README.md.",
    )
    rag_length_norm: float = Field(
        default=0.5, ge=0.0, le=1.0, description="b of the full-text score's length normalisation."
    )
    rag_exact_scan_threshold: int = Field(
        default=3000,
        ge=0,
        le=1_000_000,
        description="A filtered or row-level-secured search whose scope admits at most this many chunks "
        "ranks them exactly (every distance computed) instead of walking HNSW; 0: always HNSW. The value "
        "for a corpus of up to 100k chunks: the SQL scales it by sqrt(chunks / 100k) above, and raises it "
        "for a signed-in user's scope without a filter (one pass of its half-precision vectors, migrations "
        "029 and 039: 2.5 x); a filtered scope's limit is 1.6 x it x (chunks / 100k)^(1/3) (migration 047). "
        "sql/README.md, bench/latency/plan_threshold.py, bench/latency/crossover.py.",
    )
    # Stage 2 + 3: a versioned rerank policy (backend/retrieval/policies/rerank_v<N>.json) weights the
    # candidates' features and carries the calibrated dynamic cut.
    rag_rerank_policy: str = Field(
        default="v2",
        description="Rerank policy version: v1 = the seed's similarity x 0.7 + keyword_coverage x 0.25 + "
        "structure bonus 0.05; v2 = weights learned leave-one-dataset-out (docs/benchmarks.md).",
    )
    rag_rerank_policies_dir: Path | None = Field(default=None, description="None: the shipped policies.")
    rag_rerank_similarity: Literal["cosine", "rrf"] = Field(
        default="cosine",
        description="What the 'similarity' feature (rerank_v1) is in hybrid mode: the cosine hybrid_search "
        "returns, or the RRF score normalised by the query's best RRF score.",
    )
    rag_per_doc_cap: int = Field(
        default=3,
        ge=0,
        description="At most this many chunks of one document among a search's results while other "
        "documents' candidates remain (seed: dedup_and_diversify); 0 turns diversity off.",
    )
    search_max_top_k: int = Field(
        default=100,
        ge=1,
        le=1000,
        description="Most results a caller may ask of one search; also bounds the chat budgets below.",
    )
    # The reranker that orders the candidates after the policy scored them (backend/rerank): the
    # heuristic policy itself, or a cross-encoder behind a Jina/Cohere-style HTTP rerank API.
    rerank_default: Literal["heuristic", "jina", "cohere"] = Field(
        default="heuristic",
        description="The reranker of requests that name none; jina/cohere need RERANK_PROVIDER to match.",
    )
    rerank_provider: Literal["jina", "cohere"] | None = Field(
        default=None,
        description="The model reranker a request may choose (reranker=jina|cohere).",
    )
    rerank_api_key: SecretStr | None = Field(default=None, description="Bearer key of the rerank API.")
    rerank_base_url: str = Field(
        default="",
        description="Empty: the provider's API (https://api.jina.ai, https://api.cohere.com). Any server "
        "with the same API works, e.g. a self-hosted vLLM or Infinity serving BAAI/bge-reranker.",
    )
    rerank_model: str = Field(
        default="", description="Empty: jina-reranker-v2-base-multilingual (jina), rerank-v3.5 (cohere)."
    )
    rerank_top_n: int = Field(
        default=20, ge=1, le=1000, description="The model scores the policy's best N candidates (top_n)."
    )
    rerank_timeout_s: float = Field(
        default=5.0, gt=0, description="Past this the heuristic order is kept (the diagnostics say so)."
    )
    rerank_drop_ratio: float = Field(
        default=0.5,
        gt=0,
        le=1,
        description="The dynamic cut on model scores: keep results scored >= best x this.",
    )
    rerank_max_doc_chars: int = Field(default=4000, ge=100, description="Longest text sent per candidate.")
