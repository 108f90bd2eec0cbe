"""Web search (issue 13; seed: evidence-retention.md, unified web search and soft-wait).

A section of backend.config.Settings: its fields keep their environment names (the field name in
upper case)."""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import BaseModel, Field, SecretStr
from pydantic_settings import NoDecode

ProviderName = Literal["tavily", "searxng", "bocha", "serper", "baike", "semantic_scholar", "ncbi"]
PROVIDER_NAMES: tuple[str, ...] = get_args(ProviderName)
# What each provider cannot work without: (field, environment name, example) ...
_NEEDS: dict[str, tuple[tuple[str, str], ...]] = {
    "tavily": (("tavily_api_key", "TAVILY_API_KEY"),),
    "searxng": (("searxng_url", "SEARXNG_URL (e.g. http://localhost:8888)"),),
    "bocha": (("bocha_api_key", "BOCHA_API_KEY"), ("bocha_base_url", "BOCHA_BASE_URL")),
    "serper": (("serper_api_key", "SERPER_API_KEY"), ("serper_base_url", "SERPER_BASE_URL")),
    "baike": (
        ("baike_api_key", "BAIKE_API_KEY"),
        ("baike_list_url", "BAIKE_LIST_URL"),
        ("baike_content_url", "BAIKE_CONTENT_URL"),
    ),
    "semantic_scholar": (("semantic_scholar_base_url", "SEMANTIC_SCHOLAR_BASE_URL"),),
    "ncbi": (("ncbi_base_url", "NCBI_BASE_URL"),),
}
_URLS = (
    "tavily_base_url",
    "searxng_url",
    "bocha_base_url",
    "serper_base_url",
    "baike_list_url",
    "baike_content_url",
    "semantic_scholar_base_url",
    "ncbi_base_url",
)


class WebSettings(BaseModel):
    # --- web search (issue 13; seed: evidence-retention.md, unified web search and soft-wait) -----
    web_search_provider: (
        Literal["tavily", "searxng", "bocha", "serper", "baike", "semantic_scholar", "ncbi", "none"] | None
    ) = Field(
        default=None,
        description="One provider. None: the first of WEB_SEARCH_PROVIDERS, else tavily when "
        "TAVILY_API_KEY is set, else none.",
    )
    web_search_providers: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Several providers at once, comma-separated (bocha,serper,baike,...); each query is "
        "routed to the engine its language and kind call for (backend/web/routing.py).",
    )
    tavily_api_key: SecretStr | None = None
    tavily_base_url: str = "https://api.tavily.com"
    tavily_search_depth: Literal["basic", "advanced"] = "basic"
    tavily_topic: Literal["general", "news", "finance"] = "general"
    searxng_url: str = Field(default="", description="Base URL of a SearXNG instance with JSON enabled.")
    # --- the research agent's engines (issue 30; seed: multi-agent-research.md) ------------------
    bocha_api_key: SecretStr | None = None
    bocha_base_url: str = "https://api.bochaai.com"
    bocha_summary: bool = Field(
        default=False, description="Bocha's AI summary per hit: off, because it drops tables (seed)."
    )
    bocha_freshness: str = Field(default="noLimit", description="oneDay, oneWeek, oneMonth, oneYear, noLimit")
    serper_api_key: SecretStr | None = None
    serper_base_url: str = "https://google.serper.dev"
    serper_gl: str = Field(default="", description="Serper's country (gl), e.g. us; blank: not sent")
    serper_hl: str = Field(default="", description="Serper's interface language (hl), e.g. en")
    baike_api_key: SecretStr | None = None
    baike_list_url: str = "https://appbuilder.baidu.com/v2/baike/lemma/get_list_by_title"
    baike_content_url: str = "https://appbuilder.baidu.com/v2/baike/lemma/get_content"
    baike_max_entries: int = Field(
        default=1, ge=1, le=5, description="Entries of a name read in full (the main sense first)."
    )
    semantic_scholar_api_key: SecretStr | None = Field(
        default=None, description="Optional: without it Semantic Scholar's shared rate limit applies."
    )
    semantic_scholar_base_url: str = "https://api.semanticscholar.org"
    ncbi_api_key: SecretStr | None = Field(default=None, description="Optional: 10 instead of 3 requests/s.")
    ncbi_base_url: str = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils"
    web_max_results: int = Field(
        default=5, ge=1, le=25, description="Results per query and provider (the seed's engines: 25)."
    )
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

    @property
    def resolved_web_search_providers(self) -> tuple[str, ...]:
        """The providers in use, in the order configured: WEB_SEARCH_PROVIDERS, else WEB_SEARCH_PROVIDER,
        else tavily when TAVILY_API_KEY is set; () for none."""
        if self.web_search_providers:
            return tuple(dict.fromkeys(p for p in self.web_search_providers if p != "none"))
        if self.web_search_provider:
            return () if self.web_search_provider == "none" else (self.web_search_provider,)
        return ("tavily",) if self.secret("tavily") else ()

    @property
    def resolved_web_search_provider(self) -> str:
        """The first provider in use, or none (one name, as WEB_SEARCH_PROVIDER has always said)."""
        providers = self.resolved_web_search_providers
        return providers[0] if providers else "none"

    def secret(self, provider: str) -> str:
        """A provider's API key, blank when unset (never logged: providers put it in a header only)."""
        value = getattr(self, f"{provider}_api_key", None)
        return value.get_secret_value().strip() if isinstance(value, SecretStr) else ""


def web_search_problems(settings: WebSettings) -> list[str]:
    """What makes the web configuration unusable: an unknown name, the two provider settings
    disagreeing, a provider without its key or URL, a URL that is not http(s)."""
    listed = settings.web_search_providers
    unknown = [p for p in listed if p not in (*PROVIDER_NAMES, "none")]
    if unknown:
        return [
            f"WEB_SEARCH_PROVIDERS names unknown provider(s) {', '.join(unknown)}; "
            f"known: {', '.join(PROVIDER_NAMES)}, none"
        ]
    if "none" in listed and len(set(listed)) > 1:
        return ["WEB_SEARCH_PROVIDERS cannot mix none with providers"]
    single = settings.web_search_provider
    if listed and single and single != (listed[0] if listed[0] != "none" else "none"):
        return [
            f"WEB_SEARCH_PROVIDER={single} and WEB_SEARCH_PROVIDERS={','.join(listed)} disagree: set one, "
            "or name the same provider first in both"
        ]
    problems = []
    for provider in settings.resolved_web_search_providers:
        for name, env in _NEEDS[provider]:
            value = getattr(settings, name)
            text = value.get_secret_value() if isinstance(value, SecretStr) else (value or "")
            if not text.strip():
                problems.append(
                    f"web search provider {provider} needs {env} (or leave {provider} out of "
                    "WEB_SEARCH_PROVIDERS / set WEB_SEARCH_PROVIDER=none)"
                )
    for name in _URLS:
        url = getattr(settings, name).strip()
        if url and not url.startswith(("http://", "https://")):
            problems.append(f"{name.upper()} must be an http(s) URL, got {url!r}")
    return problems
