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
from backend.settings.web import WebSettings, web_search_problems
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
    embedding_provider: Literal["gemini", "local", "openai_compatible"] | None = Field(
        default=None,
        description="None: gemini when an API key is set, local otherwise. openai_compatible: the "
        "OPENAI_EMBEDDING_* settings below (POST /v1/embeddings).",
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

    # --- OpenAI-compatible providers (issue 28): DeepSeek, Qwen (DashScope), vLLM, Ollama, ... -----
    # LLM_PROVIDER=openai_compatible (answers, rewrites, plans, the WhereBuilder, assist-mode tools) and
    # EMBEDDING_PROVIDER=openai_compatible; backend/llm/openai_compatible.py, README "Model providers".
    # Timeouts and retries of the LLM are LLM_TIMEOUT_S and LLM_MAX_RETRIES, as for Gemini.
    openai_base_url: str = Field(
        default="",
        description="The API root, /v1 included: https://api.deepseek.com, "
        "https://dashscope.aliyuncs.com/compatible-mode/v1, http://host:8000/v1 (vLLM), "
        "http://localhost:11434/v1 (Ollama).",
    )
    openai_api_key: SecretStr | None = Field(
        default=None, description="Sent as Authorization: Bearer; unset for a local server that needs none."
    )
    openai_model: str = Field(default="", description="The chat model, e.g. deepseek-chat, qwen-plus.")
    openai_structured_output: Literal["auto", "json_schema", "json_object", "text"] = Field(
        default="auto",
        description="How JSON is asked for: json_schema (response_format with the schema), json_object "
        "(JSON mode, the schema in the instructions), text (the schema in the instructions, the reply "
        "parsed leniently). auto: json_schema, stepping down once per process when the server refuses it.",
    )
    openai_embedding_base_url: str = Field(default="", description="Empty: OPENAI_BASE_URL.")
    openai_embedding_api_key: SecretStr | None = Field(default=None, description="Unset: OPENAI_API_KEY.")
    openai_embedding_model: str = Field(
        default="", description="The embedding model as the server names it, e.g. BAAI/bge-m3, bge-m3."
    )
    openai_embedding_dims: int | None = Field(
        default=None,
        ge=1,
        le=16_000,
        description="The vectors' size; None: discovered with one request when first needed.",
    )
    openai_embedding_send_dims: bool = Field(
        default=False,
        description="Send OPENAI_EMBEDDING_DIMS as `dimensions` (OpenAI text-embedding-3, Matryoshka "
        "models); false: the model's own size must equal OPENAI_EMBEDDING_DIMS when that is set.",
    )
    openai_embedding_query_prefix: str = Field(
        default="", description='Put before each query (e5 models: "query: "); bge-m3 needs none.'
    )
    openai_embedding_document_prefix: str = Field(
        default="", description='Put before each passage (e5 models: "passage: ").'
    )
    openai_embedding_batch_size: int = Field(default=32, ge=1, le=2048, description="Texts per request.")
    openai_embedding_max_in_flight: int = Field(default=2, ge=1, le=64, description="Requests at once.")
    openai_embedding_timeout_s: float = Field(default=60.0, gt=0)
    openai_embedding_max_retries: int = Field(default=5, ge=0, le=20)

    # --- generation ------------------------------------------------------------------------------
    llm_provider: Literal["gemini", "extractive", "openai_compatible"] | None = Field(
        default=None,
        description="None: gemini when an API key is set, extractive otherwise. openai_compatible: the "
        "OPENAI_* settings below (POST /v1/chat/completions).",
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
        problems.extend(self._openai_problems())
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

    @field_validator("web_search_providers", mode="before")
    @classmethod
    def _provider_list(cls, value: object) -> object:
        """A comma-separated string or a JSON list of provider names, lower-cased."""
        if isinstance(value, str):
            text = value.strip()
            value = json.loads(text) if text.startswith("[") else text.split(",")
        if isinstance(value, list | tuple):
            return [str(v).strip().lower() for v in value if str(v).strip()]
        return value

    @model_validator(mode="after")
    def _check_web_search(self) -> Settings:
        for problem in web_search_problems(self):
            raise ValueError(problem)
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

    def _openai_problems(self) -> list[str]:
        """An OpenAI-compatible provider chosen without what it needs, or a URL that is not one."""
        problems: list[str] = []
        if self.resolved_llm_provider == "openai_compatible":
            for name in ("openai_base_url", "openai_model"):
                if not getattr(self, name).strip():
                    problems.append(f"LLM_PROVIDER=openai_compatible needs {name.upper()}")
        if self.resolved_embedding_provider == "openai_compatible":
            if not self.openai_embedding_url:
                problems.append(
                    "EMBEDDING_PROVIDER=openai_compatible needs OPENAI_EMBEDDING_BASE_URL "
                    "(or OPENAI_BASE_URL)"
                )
            if not self.openai_embedding_model.strip():
                problems.append("EMBEDDING_PROVIDER=openai_compatible needs OPENAI_EMBEDDING_MODEL")
            if self.openai_embedding_send_dims and self.openai_embedding_dims is None:
                problems.append("OPENAI_EMBEDDING_SEND_DIMS=true needs OPENAI_EMBEDDING_DIMS")
        for name in ("openai_base_url", "openai_embedding_base_url"):
            url = getattr(self, name).strip()
            if url and not url.startswith(("http://", "https://")):
                problems.append(f"{name.upper()} must be an http(s) URL, got {url!r}")
        return problems

    @property
    def openai_key(self) -> str:
        """OPENAI_API_KEY, blank when unset (sent in a header only, never logged)."""
        return self.openai_api_key.get_secret_value().strip() if self.openai_api_key else ""

    @property
    def openai_embedding_url(self) -> str:
        """OPENAI_EMBEDDING_BASE_URL, else OPENAI_BASE_URL (without a trailing slash)."""
        return (self.openai_embedding_base_url.strip() or self.openai_base_url.strip()).rstrip("/")

    @property
    def openai_embedding_key(self) -> str:
        """OPENAI_EMBEDDING_API_KEY, else OPENAI_API_KEY; blank when neither is set."""
        key = self.openai_embedding_api_key
        return key.get_secret_value().strip() if key else self.openai_key

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
    def resolved_embedding_provider(self) -> Literal["gemini", "local", "openai_compatible"]:
        if self.embedding_provider:
            return self.embedding_provider
        return "gemini" if self.gemini_api_key else "local"

    @property
    def resolved_llm_provider(self) -> Literal["gemini", "extractive", "openai_compatible"]:
        if self.llm_provider:
            return self.llm_provider
        return "gemini" if self.gemini_api_key else "extractive"

    @property
    def tavily_key(self) -> str:
        """The Tavily key, blank when unset (never logged: callers put it in a header only)."""
        return self.tavily_api_key.get_secret_value().strip() if self.tavily_api_key else ""


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
