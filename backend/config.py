"""All settings in one place: typed, validated, overridable from the environment or `.env`."""

from __future__ import annotations

import base64
import json
import re
from functools import lru_cache
from typing import Literal
from urllib.parse import urlsplit

from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from backend.budget import budget_problem
from backend.settings.auth import AuthSettings
from backend.settings.database import DatabaseSettings
from backend.settings.evidence import EvidenceSettings
from backend.settings.ingest import DEFAULT_METADATA_WHITELIST, IngestSettings
from backend.settings.research import ResearchSettings
from backend.settings.search import SearchSettings
from backend.settings.server import ServerSettings
from backend.settings.web import WebSettings
from backend.settings.where import WhereSettings

__all__ = ["DEFAULT_METADATA_WHITELIST", "MAX_MATCH_COUNT", "Settings", "get_settings"]

SUPABASE_TRANSACTION_POOLER_PORT = 6543
MAX_MATCH_COUNT = 1000  # hybrid_search / match_documents refuse a larger match_count


class Settings(
    DatabaseSettings,
    SearchSettings,
    WhereSettings,
    IngestSettings,
    EvidenceSettings,
    WebSettings,
    AuthSettings,
    ResearchSettings,
    ServerSettings,
    BaseSettings,
):
    """Every knob of the backend. Field names map to upper-case environment variables.

    The sections (backend/settings/) are composed by inheritance rather than nested, so that every
    environment name stays flat (a nested section would read SECTION__FIELD) and `settings.<field>`
    reads the same everywhere; the model providers' fields (embeddings, generation) are here.
    """

    # hide_input_in_errors: a validation error must not echo the raw input, which holds the API keys.
    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", hide_input_in_errors=True
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
