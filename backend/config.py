"""All settings in one place: typed, validated, overridable from the environment or `.env`."""

from __future__ import annotations

import base64
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from backend.budget import budget_problem

ConfidenceLevel = Literal["low", "medium", "high"]
DEFAULT_CLARIFY_LEVELS: tuple[ConfidenceLevel, ...] = ("low", "medium")
SUPABASE_TRANSACTION_POOLER_PORT = 6543
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

    # hide_input_in_errors: a validation error must not echo the raw input, which holds the API keys.
    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", hide_input_in_errors=True
    )

    # --- database -------------------------------------------------------------------------------
    database_url: str = Field(default="", description="Empty: start the embedded PostgreSQL.")
    database_read_url: str = Field(
        default="", description="A read replica for searches; empty: searches use DATABASE_URL."
    )
    database_pooler: Literal["session", "transaction"] | None = Field(
        default=None,
        description="transaction: a transaction-mode pooler (Supabase port 6543, pgbouncer) is in front, "
        "so no server-side prepared statements and no session settings. None: transaction when the "
        "URL's port is 6543, else session.",
    )
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
    rag_exact_scan_threshold: int = Field(
        default=3000,
        ge=0,
        le=1_000_000,
        description="A filtered or row-level-secured search whose scope admits at most this many chunks "
        "ranks them exactly (every distance computed) instead of walking HNSW; 0: always HNSW. "
        "sql/README.md, bench/latency/plan_threshold.py.",
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

    # --- WhereBuilder: filters inferred from the question (issue 15; seed retrieval-layer.md) ----
    where_builder: Literal["auto", "rules", "gemini"] = Field(
        default="auto",
        description="How infer_filters reads a question: rules; gemini (structured output, the rules as "
        "fallback on any failure); auto: gemini when the LLM provider is Gemini, else rules.",
    )
    where_timezone: str = Field(
        default="UTC",
        description="IANA zone of calendar words (今天, 上个月, last week), e.g. Asia/Shanghai.",
    )
    where_llm_timeout_s: float = Field(
        default=3.0, gt=0, le=60, description="Longest wait for the model's filters before the rules decide."
    )
    where_relax_enabled: bool = Field(
        default=True,
        description="When a search with inferred filters finds nothing, search once more without them "
        "(the request's `relax` overrides); the diagnostics say what was dropped.",
    )
    where_high_quality_min: float = Field(
        default=0.8, ge=0, le=1, description="The quality_score floor that 高质量 / high quality means."
    )
    where_infer_tags: bool = Field(
        default=True,
        description="A known tag named in the question becomes a tags filter (#tag always does).",
    )
    where_vocabulary_ttl_s: float = Field(
        default=60.0, ge=0, description="How long a caller's tags / languages / types are cached."
    )
    where_vocabulary_max_values: int = Field(
        default=5000, ge=1, le=100_000, description="Most distinct metadata values read for matching."
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
    filter_max_size: int = Field(
        default=200,
        ge=1,
        le=100_000,
        description="Conditions plus values (each element of a list counts) one request's filters may "
        "hold; more is a 422. Each value is checked on every chunk a search reads: ~0.6 us a row per "
        "value of an $in on a list field (tags), up to ~25,000 rows a search (README, Limits).",
    )
    max_document_chars: int = Field(default=2_000_000, ge=1)
    # PDF and HTML files (uploads, the CLI, web pages read in full) are parsed in a child process with
    # these bounds (backend/ingest/sandbox.py); past one, the file is refused naming it (413).
    parse_timeout_s: float = Field(
        default=30.0, gt=0, le=3600, description="Wall-clock time one parse may take."
    )
    parse_memory_mb: int = Field(
        default=1024, ge=128, le=65536, description="Address space of the parsing process (RLIMIT_AS)."
    )
    pdf_max_pages: int = Field(default=2000, ge=1, description="Pages a PDF may have.")
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
    chat_gap_missing_idf_share: float = Field(
        default=0.3,
        ge=0,
        le=1,
        description="Gap searches run when question terms the corpus has but the evidence lacks carry "
        "this share of the question's idf (a rare missing name triggers, a generic word does not).",
    )
    chat_rank_pool_multiplier: float = Field(default=3.0, gt=0)
    chat_assist_tools: bool = Field(
        default=True,
        description="Assist mode: a model that can call functions (Gemini) may run search_local / "
        "search_web while answering; what it finds joins the cited sources.",
    )
    chat_assist_max_calls: int = Field(default=3, ge=0, le=10, description="Tool calls per answer.")
    chat_clarify_enabled: bool = True
    chat_clarify_levels: list[ConfidenceLevel] = Field(
        default_factory=lambda: list(DEFAULT_CLARIFY_LEVELS),
        description="Clarify only at these confidence levels: a strongly supported best answer is given.",
    )
    score_policy_version: str = "v3"
    score_policies_dir: Path | None = Field(default=None, description="None: the shipped policies.")
    confidence_top_n: int = Field(default=5, ge=1, le=50)

    # --- generation ------------------------------------------------------------------------------
    llm_provider: Literal["gemini", "extractive"] | None = Field(
        default=None, description="None: gemini when an API key is set, extractive otherwise."
    )
    gemini_chat_model: str = "gemini-2.5-flash"
    llm_timeout_s: float = Field(default=60.0, gt=0)
    llm_max_retries: int = Field(default=3, ge=0)
    context_max_tokens: int = Field(
        default=6000,
        ge=100,
        description="Tokens one answer may use in all: instructions, history, question, sources and the "
        "reply reserve. Sources get what is left (docs/context-budget.md).",
    )
    context_reply_tokens: int = Field(default=1024, ge=0, description="Room kept free for the reply.")
    context_token_counter: Literal["auto", "gemini", "estimate"] = Field(
        default="auto",
        description="auto: Gemini's count-tokens API when the LLM is Gemini, else the calibrated estimate.",
    )
    context_count_timeout_s: float = Field(
        default=2.0, gt=0, description="Longest wait for token counts; the rest is estimated."
    )
    context_count_cache_size: int = Field(default=4096, ge=0, description="Counted texts remembered.")
    context_estimate_margin: float = Field(
        default=1.1,
        ge=1.0,
        le=3.0,
        description="The estimate is multiplied by this (1.1: 95% of texts are not under-counted).",
    )
    context_near_duplicate_threshold: float = Field(
        default=0.8,
        gt=0,
        le=1,
        description="A source whose MinHash similarity (or containment) with a better one reaches this "
        "is dropped from the context.",
    )
    chat_history_turns: int = Field(default=6, ge=0)
    # A retrieved chunk is evidence for chat when it shares this share of the query's significant terms,
    # or when its cosine reaches chat_min_similarity (model-dependent; e5 cosines sit high).
    chat_min_keyword_coverage: float = Field(default=0.25, ge=0, le=1)
    chat_min_similarity: float = Field(default=0.86, ge=-1, le=1)
    max_query_chars: int = Field(default=2000, ge=1)

    # --- web search (issue 13; seed: evidence-retention.md, unified web search and soft-wait) -----
    web_search_provider: Literal["tavily", "searxng", "none"] | None = Field(
        default=None, description="None: tavily when TAVILY_API_KEY is set, none otherwise."
    )
    tavily_api_key: SecretStr | None = None
    tavily_base_url: str = "https://api.tavily.com"
    tavily_search_depth: Literal["basic", "advanced"] = "basic"
    tavily_topic: Literal["general", "news", "finance"] = "general"
    searxng_url: str = Field(default="", description="Base URL of a SearXNG instance with JSON enabled.")
    web_max_results: int = Field(default=5, ge=1, le=20)
    web_timeout_s: float = Field(default=8.0, gt=0, description="Wall-clock bound of one provider request.")
    web_max_retries: int = Field(default=2, ge=0, le=10)
    web_backoff_base_s: float = Field(default=0.25, gt=0)
    web_backoff_max_s: float = Field(
        default=4.0, gt=0, description="Longest wait between attempts; a longer Retry-After gives up."
    )
    web_max_concurrency: int = Field(default=4, ge=1, le=64, description="Requests in flight per provider.")
    web_soft_wait_ms: int = Field(
        default=2000, ge=0, le=300_000, description="Chat: how long the web leg may run (soft deadline)."
    )
    web_local_timeout_s: float = Field(
        default=30.0, gt=0, description="Hard timeout of local retrieval beside a web leg."
    )
    web_deep_read_top_n: int = Field(default=2, ge=0, le=10, description="Top results read in full.")
    web_deep_read_timeout_s: float = Field(default=5.0, gt=0)
    web_fetch_max_bytes: int = Field(default=1_000_000, ge=1024)
    web_fetch_max_chars: int = Field(default=15_000, ge=100)
    web_fetch_max_redirects: int = Field(default=3, ge=0, le=10)
    web_allow_domains: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Only these domains (and subdomains) are searched and read."
    )
    web_deny_domains: Annotated[list[str], NoDecode] = Field(default_factory=list)
    web_allow_private_addresses: bool = Field(
        default=False, description="true only for the local fake provider: disables the SSRF guard."
    )
    web_cache_ttl_s: int = Field(default=86_400, ge=0, description="0: web results are not cached.")
    web_near_duplicate_threshold: float = Field(default=0.8, gt=0, le=1)
    # --- auth ------------------------------------------------------------------------------------
    # none: every request acts as the documented local user (backend.auth.LOCAL_IDENTITY), through
    # the same row-level security as a signed-in user. supabase: a Supabase access token is required.
    auth_mode: Literal["none", "supabase"] = "none"
    supabase_url: str = Field(default="", description="Project URL, e.g. https://abcd.supabase.co.")
    supabase_anon_key: str = Field(
        default="",
        description="The project's public anon key. The chat page at / sends it to Supabase Auth to sign "
        "in; it is public by design (row-level security guards the data), never the service key.",
    )
    supabase_jwt_secret: SecretStr | None = Field(
        default=None, description="Legacy HS256 JWT secret; unset: only JWKS (ES256/RS256) tokens pass."
    )
    service_api_key: SecretStr | None = Field(
        default=None,
        description="Bearer key of the admin/service path (writes public documents); unset: no such path.",
    )
    auth_jwks_cache_ttl_s: float = Field(default=600.0, gt=0, description="How long fetched keys are used.")
    auth_jwks_min_refresh_s: float = Field(
        default=30.0, ge=0, description="Least time between two JWKS fetches (unknown kids force no more)."
    )
    auth_jwks_timeout_s: float = Field(default=5.0, gt=0)
    auth_leeway_s: float = Field(default=10.0, ge=0, le=300, description="Clock skew allowed on exp/nbf/iat.")

    # --- deep research (issue 14; seeds: multi-agent-research.md, evidence-retention.md 三) -------
    # POST /research: a plan of <= 4 sections researched in parallel, each with its own evidence pool,
    # then a cited report. Every run is bounded by the budgets of its preset (lite | comprehensive);
    # when one runs out no new work starts, the report is written from what exists and marked partial.
    research_default_preset: Literal["lite", "comprehensive"] = "lite"
    research_max_loops: int = Field(
        default=2,
        ge=0,
        le=5,
        description="MAX_LOOPS: gap-search rounds a section may run after its first search round "
        "(comprehensive; lite runs at most 1).",
    )
    research_step_top_k: int | None = Field(
        default=None, ge=1, le=100, description="Chunks one research search keeps; None: the preset's."
    )
    research_write_top_k: int | None = Field(
        default=None,
        ge=1,
        le=100,
        description="Evidence a section is written from; None: max(preset, 1.5 x step_top_k), capped.",
    )
    research_gap_ratio: float = Field(
        default=0.25, ge=0, le=1, description="Share of a section's evidence reserved for gap-search finds."
    )
    research_rank_pool_multiplier: float = Field(default=3.0, gt=0)
    research_context_max_tokens: int = Field(
        default=6000, ge=500, description="Token budget of one section's sources in the model's context."
    )
    research_parallel_sections: int = Field(default=4, ge=1, le=4, description="Sections researched at once.")
    research_parallel_searches: int = Field(
        default=2, ge=1, le=16, description="Searches in flight per run (each holds a connection)."
    )
    research_model_timeout_s: float = Field(
        default=45.0, gt=0, description="Longest one model call of a run may take before its fallback."
    )
    research_write_reserve: float = Field(
        default=0.25,
        ge=0.05,
        le=0.9,
        description="Share of the deadline kept for writing: research stops at deadline x (1 - this).",
    )
    research_heartbeat_s: float = Field(
        default=10.0,
        gt=0,
        description="A quiet SSE stream sends a comment this often (proxies, disconnects).",
    )
    research_lite_deadline_s: float = Field(default=90.0, gt=0, le=3600)
    research_lite_max_model_calls: int = Field(default=12, ge=1)
    research_lite_max_tokens: int = Field(default=80_000, ge=1000)
    research_lite_max_searches: int = Field(default=16, ge=1)
    research_comprehensive_deadline_s: float = Field(default=240.0, gt=0, le=3600)
    research_comprehensive_max_model_calls: int = Field(default=30, ge=1)
    research_comprehensive_max_tokens: int = Field(default=250_000, ge=1000)
    research_comprehensive_max_searches: int = Field(default=40, ge=1)

    # --- HTTP surface ------------------------------------------------------------------------------
    cors_origins: list[str] = Field(
        default_factory=list,
        description="Origins a browser may call the API from (CORS allow-list); empty: none.",
    )
    rate_limit_search_per_minute: int = Field(default=120, ge=0, description="Per caller; 0: unlimited.")
    rate_limit_chat_per_minute: int = Field(default=30, ge=0)
    rate_limit_research_per_minute: int = Field(default=6, ge=0)
    rate_limit_ingest_per_minute: int = Field(default=60, ge=0)

    # --- telemetry (docs/telemetry.md) ------------------------------------------------------------
    metrics_enabled: bool = Field(
        default=True,
        description="Serve Prometheus metrics at GET /metrics (no sign-in, like /health: restrict it at "
        "the network or turn it off).",
    )
    embedding_warm_up: bool = Field(
        default=True, description="Load the local embedding model at start-up instead of on first use."
    )
    query_embedding_cache_size: int = Field(
        default=512, ge=0, le=1_000_000, description="Query vectors kept in memory (LRU); 0: no cache."
    )

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
        problems.extend(self._auth_problems())
        problems.extend(self._rerank_problems())
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def _budget_problems(self) -> list[str]:
        """The chat budgets derived from LOCAL/STEP/WRITE_TOP_K must fit the search limits, or every
        /chat would fail at run time with an error that blames the user."""

        problem = budget_problem(
            self.local_top_k or self.rag_top_k_max,
            self.step_top_k,
            self.write_top_k,
            max_top_k=self.search_max_top_k,
            max_match_count=MAX_MATCH_COUNT,
        )
        return [f"chat budget (LOCAL_TOP_K / STEP_TOP_K / WRITE_TOP_K): {problem}"] if problem else []

    @field_validator("where_timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(
                f"WHERE_TIMEZONE {value!r} is not an IANA time zone (e.g. UTC, Asia/Shanghai)"
            ) from exc
        return value

    @field_validator("web_allow_domains", "web_deny_domains", mode="before")
    @classmethod
    def _domain_list(cls, value: object) -> object:
        """A JSON list or a comma-separated string; host names lower-cased, a leading '.' or '*.' dropped."""
        if isinstance(value, str):
            text = value.strip()
            value = json.loads(text) if text.startswith("[") else text.split(",")
        if isinstance(value, list | tuple):
            return [d.strip().lower().removeprefix("*.").strip(".") for d in map(str, value) if d.strip()]
        return value

    @model_validator(mode="after")
    def _check_web_search(self) -> Settings:
        provider = self.resolved_web_search_provider
        if provider == "tavily" and not self.tavily_key:
            raise ValueError(
                "WEB_SEARCH_PROVIDER=tavily needs TAVILY_API_KEY (or set WEB_SEARCH_PROVIDER=none)"
            )
        if provider == "searxng" and not self.searxng_url.strip():
            raise ValueError("WEB_SEARCH_PROVIDER=searxng needs SEARXNG_URL (e.g. http://localhost:8888)")
        for name in ("tavily_base_url", "searxng_url"):
            url = getattr(self, name).strip()
            if url and not url.startswith(("http://", "https://")):
                raise ValueError(f"{name.upper()} must be an http(s) URL, got {url!r}")
        return self

    def _rerank_problems(self) -> list[str]:
        problems: list[str] = []
        if self.rerank_default != "heuristic" and self.rerank_default != self.rerank_provider:
            problems.append(
                f"RERANK_DEFAULT={self.rerank_default} needs RERANK_PROVIDER={self.rerank_default} "
                "(and its RERANK_API_KEY)"
            )
        if self.rerank_provider and not self.rerank_base_url.strip() and not self.rerank_key:
            problems.append(f"RERANK_PROVIDER={self.rerank_provider} needs RERANK_API_KEY")
        url = self.rerank_base_url.strip()
        if url and not url.startswith(("http://", "https://")):
            problems.append(f"RERANK_BASE_URL must be an http(s) URL, got {url!r}")
        return problems

    @property
    def rerank_key(self) -> str:
        """The rerank API key, blank when unset (sent in a header only, never logged)."""
        return self.rerank_api_key.get_secret_value().strip() if self.rerank_api_key else ""

    def _auth_problems(self) -> list[str]:
        problems: list[str] = []
        url = self.supabase_url.strip()
        if self.auth_mode == "supabase" and not url:
            problems.append(
                "AUTH_MODE=supabase needs SUPABASE_URL (the project URL, e.g. https://abcd.supabase.co)"
            )
        if url and not re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", url):
            problems.append(f"SUPABASE_URL ({url!r}) must be an http(s) URL such as https://abcd.supabase.co")
        key = self.service_api_key.get_secret_value() if self.service_api_key else None
        if key is not None and len(key) < 32:
            problems.append("SERVICE_API_KEY must be at least 32 characters (e.g. `openssl rand -hex 32`)")
        secret = self.supabase_jwt_secret.get_secret_value() if self.supabase_jwt_secret else None
        if secret is not None and len(secret) < 32:
            problems.append("SUPABASE_JWT_SECRET must be the project's JWT secret (at least 32 characters)")
        if _is_secret_supabase_key(self.supabase_anon_key.strip()) or (
            key is not None and self.supabase_anon_key.strip() == key
        ):
            # GET /client-config hands this key to every browser: a secret one there is a breach.
            problems.append(
                "SUPABASE_ANON_KEY holds a secret key (service_role / sb_secret_); it is sent to every "
                "browser: use the project's anon (publishable) key"
            )
        return problems

    @property
    def supabase_auth_url(self) -> str:
        """{SUPABASE_URL}/auth/v1: the issuer of the project's access tokens."""
        return self.supabase_url.strip().rstrip("/") + "/auth/v1"

    @property
    def uses_embedded_db(self) -> bool:
        return not self.database_url.strip()

    def pooler_mode(self, url: str) -> Literal["session", "transaction"]:
        """How connections to `url` behave: through a transaction-mode pooler or not."""
        if self.database_pooler is not None:
            return self.database_pooler
        try:
            port = urlsplit(url).port
        except ValueError:
            port = None
        return "transaction" if port == SUPABASE_TRANSACTION_POOLER_PORT else "session"

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

    @property
    def tavily_key(self) -> str:
        """The Tavily key, blank when unset (never logged: callers put it in a header only)."""
        return self.tavily_api_key.get_secret_value().strip() if self.tavily_api_key else ""

    @property
    def resolved_web_search_provider(self) -> Literal["tavily", "searxng", "none"]:
        if self.web_search_provider:
            return self.web_search_provider
        return "tavily" if self.tavily_key else "none"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once."""
    return Settings()


def _is_secret_supabase_key(key: str) -> bool:
    """A Supabase secret key: the new `sb_secret_` kind, or a legacy JWT whose role is service_role."""
    if key.startswith("sb_secret_"):
        return True
    parts = key.split(".")
    if len(parts) != 3:
        return False
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(payload, dict) and payload.get("role") == "service_role"
