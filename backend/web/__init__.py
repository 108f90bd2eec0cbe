"""Web search beyond the corpus (issue 13): providers (issue 30: Bocha, Serper, Baike, Semantic Scholar,
NCBI beside Tavily and SearXNG, each query routed to one: routing.py), page reads, soft-wait,
cross-source dedup, cache.

Typical use, inside an async request handler::

    web = create_web_search(settings, cache=PostgresWebCache(pool))
    legs = web.legs(question, caller=identity.cache_scope)
    outcome = await soft_wait(local_search(), legs, WaitBudget.for_mode(settings, "chat"))
    hits = cross_source_dedup(local_texts, outcome.web).kept
"""

from backend.web.academic import NcbiProvider, SemanticScholarProvider
from backend.web.cache import CachedProvider, PostgresWebCache, WebCache, WebCacheStore
from backend.web.dedup import DedupCounts, DedupResult, LocalText, content_hash, cross_source_dedup
from backend.web.engines import BaikeProvider, BochaProvider, SerperProvider
from backend.web.factory import create_provider, create_web_search
from backend.web.pages import Page, PageLimits, PageReader, deep_read
from backend.web.providers import NoWebSearch, SearxngProvider, TavilyProvider, WebSearchProvider
from backend.web.routing import Route, route
from backend.web.safety import AddressGuard, UrlPolicy, guarded_transport, is_public
from backend.web.search import WebLeg, WebSearch, merge_results
from backend.web.softwait import SoftWaitDiagnostics, SoftWaitOutcome, WaitBudget, soft_wait, web_only
from backend.web.types import ProviderDiagnostics, ProviderResponse, SearchOptions, WebResult
from backend.web.urls import canonical_url, domain_permitted

__all__ = [
    "AddressGuard",
    "BaikeProvider",
    "BochaProvider",
    "CachedProvider",
    "DedupCounts",
    "DedupResult",
    "LocalText",
    "NcbiProvider",
    "NoWebSearch",
    "Page",
    "PageLimits",
    "PageReader",
    "PostgresWebCache",
    "ProviderDiagnostics",
    "ProviderResponse",
    "Route",
    "SearchOptions",
    "SearxngProvider",
    "SemanticScholarProvider",
    "SerperProvider",
    "SoftWaitDiagnostics",
    "SoftWaitOutcome",
    "TavilyProvider",
    "UrlPolicy",
    "WaitBudget",
    "WebCache",
    "WebCacheStore",
    "WebLeg",
    "WebResult",
    "WebSearch",
    "WebSearchProvider",
    "canonical_url",
    "content_hash",
    "create_provider",
    "create_web_search",
    "cross_source_dedup",
    "deep_read",
    "domain_permitted",
    "guarded_transport",
    "is_public",
    "merge_results",
    "route",
    "soft_wait",
    "web_only",
]
