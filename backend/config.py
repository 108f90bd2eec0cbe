"""All settings in one place: typed, validated, overridable from the environment or `.env`."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

ConfidenceLevel = Literal["low", "medium", "high"]
DEFAULT_CLARIFY_LEVELS: tuple[ConfidenceLevel, ...] = ("low", "medium")
MAX_MATCH_COUNT = 1000  # hybrid_search / match_documents refuse a larger match_count

# Metadata keys a caller may attach to documents (the seed's whitelist, plus our ingest-time fields).
DEFAULT_METADATA_WHITELIST = (
    "doc_id",
    "source",
    "filename",
    "content_type",
    "media_type",
    "lang",
    "tags",
    "keyphrases",
    "created_at",
    "text_len",
    "too_short",
    "quality_score",
)


class Settings(BaseSettings):
    """Every knob of the backend. Field names map to upper-case environment variables."""

    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    # --- database -------------------------------------------------------------------------------
    database_url: str = Field(default="", description="Empty: start the embedded PostgreSQL.")
    embedded_db_dir: Path = Path("./.data/postgres")
    db_pool_min_size: int = Field(default=1, ge=1)
    db_pool_max_size: int = Field(default=10, ge=1)
    db_statement_timeout_ms: int = Field(default=30_000, ge=0)
    auto_migrate: bool | None = Field(
        default=None,
        description="Apply pending migrations when the API or a CLI command starts. None: on for the "
        "embedded database, off for DATABASE_URL (deploys migrate explicitly: `db upgrade`, "
        "`alembic upgrade head` or `supabase db push`).",
    )

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
    rag_hnsw_ef_search: int = Field(default=100, ge=1, le=1000)
    rag_hnsw_filtered_ef_search: int = Field(
        default=200, ge=1, le=1000, description="hnsw.ef_search when a metadata filter is given."
    )
    rag_candidate_count: int | None = Field(
        default=None, ge=1, le=10000, description="Rows per leg before fusion; None: max(4 x prefetch, 40)."
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

    # --- embeddings ------------------------------------------------------------------------------
    embedding_provider: Literal["gemini", "local"] | None = Field(
        default=None, description="None: gemini when an API key is set, local otherwise."
    )
    gemini_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("GEMINI_API_KEY", "GOOGLE_API_KEY")
    )
    gemini_base_url: str | None = Field(default=None, description="Override the API endpoint (tests).")
    gemini_embedding_model: str = "gemini-embedding-001"
    gemini_embedding_dims: int = Field(default=768, ge=1, le=3072)
    gemini_embedding_batch_size: int = Field(default=100, ge=1, le=250)
    gemini_max_in_flight: int = Field(default=4, ge=1)
    gemini_timeout_s: float = Field(default=60.0, gt=0)
    gemini_max_retries: int = Field(default=5, ge=0)
    local_embedding_batch_size: int = Field(default=16, ge=1)

    # --- ingestion -------------------------------------------------------------------------------
    chunk_size: int = Field(default=500, ge=50, description="Target characters per chunk.")
    chunk_overlap: int = Field(default=50, ge=0)
    chunk_min_chars: int = Field(default=20, ge=1, description="Below this a chunk is flagged too_short.")
    quality_sat_len: int = Field(default=200, ge=1)
    keyphrase_top_k: int = Field(default=10, ge=0)
    metadata_whitelist: list[str] = Field(default_factory=lambda: list(DEFAULT_METADATA_WHITELIST))
    max_document_chars: int = Field(default=2_000_000, ge=1)
    max_request_bytes: int = Field(default=20 * 1024 * 1024, ge=1024)
    ingest_embed_batch_size: int = Field(default=64, ge=1)
    ingest_bulk_maintenance_work_mem: str = Field(
        default="1GB", description="maintenance_work_mem for the index rebuilds of `ingest --bulk`."
    )
    ingest_bulk_parallel_workers: int = Field(
        default=2, ge=0, le=64, description="max_parallel_maintenance_workers for those rebuilds."
    )

    # --- evidence budgets, gap supplement, confidence (seeds: evidence-retention, overall-score-confidence)
    local_top_k: int | None = Field(default=None, ge=1, description="None: rag_top_k_max.")
    step_top_k: int | None = Field(default=None, ge=1, description="None: local_top_k.")
    write_top_k: int | None = Field(default=None, ge=1, description="None: step_top_k.")
    chat_gap_supplement_enabled: bool = True
    chat_gap_max_queries: int = Field(default=3, ge=1, le=10)
    chat_gap_ratio: float = Field(default=0.2, ge=0, le=1)
    chat_rank_pool_multiplier: float = Field(default=3.0, gt=0)
    chat_clarify_enabled: bool = True
    chat_clarify_levels: list[ConfidenceLevel] = Field(
        default_factory=lambda: list(DEFAULT_CLARIFY_LEVELS),
        description="Clarify only at these confidence levels: a strongly supported best answer is given.",
    )
    score_policy_version: str = "v2"
    score_policies_dir: Path | None = Field(default=None, description="None: the shipped policies.")
    confidence_top_n: int = Field(default=5, ge=1, le=50)

    # --- generation ------------------------------------------------------------------------------
    llm_provider: Literal["gemini", "extractive"] | None = Field(
        default=None, description="None: gemini when an API key is set, extractive otherwise."
    )
    gemini_chat_model: str = "gemini-2.5-flash"
    llm_timeout_s: float = Field(default=60.0, gt=0)
    llm_max_retries: int = Field(default=3, ge=0)
    context_max_tokens: int = Field(default=3000, ge=100)
    chat_history_turns: int = Field(default=6, ge=0)
    # A retrieved chunk is evidence for chat when it shares this share of the query's significant terms,
    # or when its cosine reaches chat_min_similarity (model-dependent; e5 cosines sit high).
    chat_min_keyword_coverage: float = Field(default=0.25, ge=0, le=1)
    chat_min_similarity: float = Field(default=0.86, ge=-1, le=1)
    max_query_chars: int = Field(default=2000, ge=1)

    # --- server ----------------------------------------------------------------------------------
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    log_level: str = "INFO"

    @model_validator(mode="after")
    def _check_consistency(self) -> Settings:
        problems: list[str] = []
        if self.rag_top_k_min > self.rag_top_k_max:
            problems.append(
                f"rag_top_k_min ({self.rag_top_k_min}) must not exceed rag_top_k_max ({self.rag_top_k_max})"
            )
        drop = self.rag_similarity_drop_ratio
        if drop is not None and not 0.0 < drop <= 1.0:
            problems.append(f"rag_similarity_drop_ratio ({self.rag_similarity_drop_ratio}) must be in (0, 1]")
        for name in ("rag_full_text_weight", "rag_semantic_weight"):
            if getattr(self, name) < 0:
                problems.append(f"{name} ({getattr(self, name)}) must not be negative")
        if self.rag_full_text_weight == 0 and self.rag_semantic_weight == 0:
            problems.append("rag_full_text_weight and rag_semantic_weight cannot both be 0")
        if self.chunk_overlap >= self.chunk_size:
            problems.append(f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size")
        if self.db_pool_min_size > self.db_pool_max_size:
            problems.append("db_pool_min_size must not exceed db_pool_max_size")
        problems.extend(self._budget_problems())
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def _budget_problems(self) -> list[str]:
        """The chat budgets derived from LOCAL/STEP/WRITE_TOP_K must fit the search limits, or every
        /chat would fail at run time with an error that blames the user."""
        from backend.retrieval.budget import EvidenceBudget

        local = self.local_top_k or self.rag_top_k_max
        if local > self.search_max_top_k:
            return [
                f"local_top_k ({local}, from LOCAL_TOP_K or RAG_TOP_K_MAX) exceeds "
                f"search_max_top_k ({self.search_max_top_k})"
            ]
        budget = EvidenceBudget.compute(local, self.step_top_k, self.write_top_k)
        if budget.local_recall_k > self.search_max_top_k:
            most = self.search_max_top_k // 2
            return [
                f"step_top_k ({budget.step_k}) makes each chat search keep {budget.local_recall_k} chunks "
                f"(2 x step_top_k), above search_max_top_k ({self.search_max_top_k}): set STEP_TOP_K "
                f"to at most {most} or raise SEARCH_MAX_TOP_K"
            ]
        if budget.actual_recall > MAX_MATCH_COUNT:
            return [
                f"step_top_k ({budget.step_k}) asks {budget.actual_recall} candidates of the database "
                f"(4 x step_top_k); hybrid_search returns at most {MAX_MATCH_COUNT}"
            ]
        return []

    @property
    def uses_embedded_db(self) -> bool:
        return not self.database_url.strip()

    @property
    def resolved_auto_migrate(self) -> bool:
        return self.uses_embedded_db if self.auto_migrate is None else self.auto_migrate

    @property
    def resolved_embedding_provider(self) -> Literal["gemini", "local"]:
        if self.embedding_provider:
            return self.embedding_provider
        return "gemini" if self.gemini_api_key else "local"

    @property
    def resolved_llm_provider(self) -> Literal["gemini", "extractive"]:
        if self.llm_provider:
            return self.llm_provider
        return "gemini" if self.gemini_api_key else "extractive"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return Settings()
