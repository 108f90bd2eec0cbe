"""The one place that turns settings into a WebSearch: providers, HTTP clients, cache, page reader."""

from __future__ import annotations

import httpx

from backend.config import Settings
from backend.web.academic import NcbiProvider, SemanticScholarProvider
from backend.web.cache import WebCache, WebCacheStore
from backend.web.engines import BaikeProvider, BochaProvider, SerperProvider
from backend.web.pages import PageLimits, PageReader, url_policy
from backend.web.providers import SearxngProvider, TavilyProvider, WebSearchProvider
from backend.web.retry import RetryPolicy
from backend.web.safety import guarded_transport
from backend.web.search import WebSearch
from backend.web.types import SearchOptions


def create_provider(
    settings: Settings, client: httpx.AsyncClient, name: str | None = None
) -> WebSearchProvider | None:
    """The provider `name` (default: the first configured; None for `none`); Settings already checked
    that it has its key and URLs."""
    name = name or settings.resolved_web_search_provider
    policy = RetryPolicy.from_settings(settings)
    slots = settings.web_max_concurrency
    match name:
        case "tavily":
            return TavilyProvider(
                client,
                api_key=settings.tavily_key,
                base_url=settings.tavily_base_url,
                policy=policy,
                max_concurrency=slots,
            )
        case "searxng":
            return SearxngProvider(
                client, base_url=settings.searxng_url, policy=policy, max_concurrency=slots
            )
        case "bocha":
            return BochaProvider(
                client,
                api_key=settings.secret("bocha"),
                base_url=settings.bocha_base_url,
                policy=policy,
                max_concurrency=slots,
                summary=settings.bocha_summary,
                freshness=settings.bocha_freshness,
            )
        case "serper":
            return SerperProvider(
                client,
                api_key=settings.secret("serper"),
                base_url=settings.serper_base_url,
                policy=policy,
                max_concurrency=slots,
                gl=settings.serper_gl,
                hl=settings.serper_hl,
            )
        case "baike":
            return BaikeProvider(
                client,
                api_key=settings.secret("baike"),
                list_url=settings.baike_list_url,
                content_url=settings.baike_content_url,
                policy=policy,
                max_concurrency=slots,
                max_entries=settings.baike_max_entries,
            )
        case "semantic_scholar":
            return SemanticScholarProvider(
                client,
                base_url=settings.semantic_scholar_base_url,
                api_key=settings.secret("semantic_scholar"),
                policy=policy,
                max_concurrency=slots,
            )
        case "ncbi":
            return NcbiProvider(
                client,
                base_url=settings.ncbi_base_url,
                api_key=settings.secret("ncbi"),
                policy=policy,
                max_concurrency=slots,
            )
        case _:
            return None


def create_web_search(
    settings: Settings,
    *,
    cache: WebCacheStore | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    page_transport: httpx.AsyncBaseTransport | None = None,
) -> WebSearch:
    """A WebSearch from settings. `cache` (PostgresWebCache) is used when WEB_CACHE_TTL_S > 0; the
    transports are for tests (the page transport defaults to the SSRF-guarded one)."""
    options = SearchOptions.from_settings(settings)
    names = settings.resolved_web_search_providers
    if not names:
        return WebSearch([], options=options)
    limits = httpx.Limits(max_connections=settings.web_max_concurrency * 2 * len(names))
    client = httpx.AsyncClient(
        timeout=httpx.Timeout(settings.web_timeout_s), limits=limits, transport=transport
    )
    providers = [p for name in names if (p := create_provider(settings, client, name)) is not None]
    cached = (
        WebCache(cache, settings.web_cache_ttl_s)
        if cache is not None and settings.web_cache_ttl_s > 0
        else None
    )
    reader: PageReader | None = None
    clients = [client]
    if settings.web_deep_read_top_n:
        policy = url_policy(settings)
        page_client = httpx.AsyncClient(
            timeout=httpx.Timeout(settings.web_deep_read_timeout_s),
            transport=page_transport or guarded_transport(policy.guard),
            follow_redirects=False,  # PageReader follows them itself, checking every hop
        )
        clients.append(page_client)
        reader = PageReader(page_client, policy=policy, limits=PageLimits.from_settings(settings))
    return WebSearch(
        providers,
        options=options,
        cache=cached,
        reader=reader,
        deep_read_top_n=settings.web_deep_read_top_n,
        deep_read_timeout_s=settings.web_deep_read_timeout_s,
        clients=clients,
    )
