"""The one place that turns settings into a WebSearch: provider, HTTP clients, cache, page reader."""

from __future__ import annotations

import httpx

from backend.config import Settings
from backend.web.cache import WebCache, WebCacheStore
from backend.web.pages import PageLimits, PageReader, url_policy
from backend.web.providers import SearxngProvider, TavilyProvider, WebSearchProvider
from backend.web.retry import RetryPolicy
from backend.web.safety import guarded_transport
from backend.web.search import WebSearch
from backend.web.types import SearchOptions


def create_provider(settings: Settings, client: httpx.AsyncClient) -> WebSearchProvider | None:
    """The provider WEB_SEARCH_PROVIDER names (None for `none`); Settings already checked its keys."""
    policy = RetryPolicy.from_settings(settings)
    match settings.resolved_web_search_provider:
        case "tavily":
            return TavilyProvider(
                client,
                api_key=settings.tavily_key,
                base_url=settings.tavily_base_url,
                policy=policy,
                max_concurrency=settings.web_max_concurrency,
            )
        case "searxng":
            return SearxngProvider(
                client,
                base_url=settings.searxng_url,
                policy=policy,
                max_concurrency=settings.web_max_concurrency,
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
    if settings.resolved_web_search_provider == "none":
        return WebSearch([], options=options)
    limits = httpx.Limits(max_connections=settings.web_max_concurrency * 2)
    client = httpx.AsyncClient(
        timeout=httpx.Timeout(settings.web_timeout_s), limits=limits, transport=transport
    )
    provider = create_provider(settings, client)
    assert provider is not None
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
        [provider],
        options=options,
        cache=cached,
        reader=reader,
        deep_read_top_n=settings.web_deep_read_top_n,
        deep_read_timeout_s=settings.web_deep_read_timeout_s,
        clients=clients,
    )
