"""Web search (issue 13; seed: evidence-retention.md, unified web search and soft-wait).

A section of backend.config.Settings: its fields keep their environment names (the field name in
upper case)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, SecretStr
from pydantic_settings import NoDecode


class WebSettings(BaseModel):
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
