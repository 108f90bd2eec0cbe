"""A web search across the configured providers: one leg per provider, each a search plus an optional
deep read, failures turned into diagnostics. Timing (soft deadlines) lives in backend/web/softwait.py."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
import uuid
from collections.abc import Sequence

import httpx

from backend.errors import WebSearchError
from backend.web.cache import CachedProvider, WebCache
from backend.web.pages import DeepReadReport, PageReader, deep_read
from backend.web.providers import WebSearchProvider
from backend.web.routing import Route, entity_of
from backend.web.routing import route as route_query
from backend.web.types import ProviderDiagnostics, SearchOptions, WebResult
from backend.web.urls import domain_permitted

logger = logging.getLogger(__name__)


class WebLeg:
    """One provider's part of a search. Its results and diagnostics are filled in as it goes, so a leg
    cancelled at a soft deadline still hands over what it had (search results, pages already read)."""

    def __init__(
        self,
        provider: WebSearchProvider,
        query: str,
        options: SearchOptions,
        *,
        reader: PageReader | None = None,
        deep_read_top_n: int = 0,
        deep_read_timeout_s: float = 5.0,
        route: str | None = None,
    ) -> None:
        self.provider = provider
        self.query = query
        self.options = options
        self.results: list[WebResult] = []
        self.diagnostics = ProviderDiagnostics(provider=provider.name, query=query, route=route)
        self._reader = reader
        self._top_n = deep_read_top_n if reader is not None else 0
        self._read_timeout_s = deep_read_timeout_s
        self._pages = DeepReadReport()

    async def run(self) -> None:
        """Never raises, except CancelledError (the caller's deadline); the outcome is in diagnostics."""
        started = time.perf_counter()
        d = self.diagnostics
        try:
            response = await self.provider.search(self.query, self.options)
            permitted = [
                r
                for r in response.results
                if domain_permitted(
                    r.url, allow=self.options.include_domains, deny=self.options.exclude_domains
                )
            ]
            d.blocked = len(response.results) - len(permitted)
            d.results, d.attempts, d.cached = len(permitted), response.attempts, response.cached
            d.status = "ok" if permitted else "empty"
            self.results = permitted
            if self._top_n and permitted:
                assert self._reader is not None
                await deep_read(
                    self._reader,
                    self.results,
                    top_n=self._top_n,
                    timeout_s=self._read_timeout_s,
                    report=self._pages,
                )
        except WebSearchError as exc:
            d.status, d.error_kind, d.error, d.attempts = "error", exc.kind, str(exc), exc.attempts
        except asyncio.CancelledError:
            if not self.results:
                d.status = "cancelled"
            raise
        except Exception as exc:  # a provider bug must not fail the answer: the local evidence still stands
            logger.exception("web search %s failed unexpectedly", self.provider.name)
            d.status, d.error_kind, d.error = "error", "bad_response", f"{type(exc).__name__}: {exc}"
        finally:
            d.latency_ms = round((time.perf_counter() - started) * 1000, 1)
            d.pages_read, d.pages_failed, d.page_errors = (
                self._pages.read,
                self._pages.failed,
                self._pages.errors,
            )


def merge_results(legs: Sequence[WebLeg]) -> list[WebResult]:
    """The legs' results interleaved by rank (each provider's first, then each one's second, ...)."""
    merged: list[WebResult] = []
    for row in itertools.zip_longest(*(leg.results for leg in legs)):
        merged.extend(r for r in row if r is not None)
    return merged


class WebSearch:
    """The configured providers, their cache, their shared HTTP clients and the page reader
    (composition: factory.py)."""

    def __init__(
        self,
        providers: Sequence[WebSearchProvider],
        *,
        options: SearchOptions,
        cache: WebCache | None = None,
        reader: PageReader | None = None,
        deep_read_top_n: int = 0,
        deep_read_timeout_s: float = 5.0,
        clients: Sequence[httpx.AsyncClient] = (),
    ) -> None:
        self.providers = list(providers)
        self.options = options
        self._cache = cache
        self._reader = reader
        self._top_n = deep_read_top_n
        self._read_timeout_s = deep_read_timeout_s
        self._clients = list(clients)

    @property
    def enabled(self) -> bool:
        return bool(self.providers)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.providers)

    def route(self, query: str, *, prefer: str | None = None) -> Route:
        """The configured engines `query` goes to and why (backend/web/routing.py); `prefer`: the plan's
        engine for the query's section."""
        return route_query(query, self.names, prefer=prefer)

    def legs(
        self,
        query: str,
        *,
        caller: uuid.UUID,
        options: SearchOptions | None = None,
        deep_read_top_n: int | None = None,
        engines: Sequence[str] | None = None,
    ) -> list[WebLeg]:
        """Fresh, not yet started legs for one query of `caller` (Identity.cache_scope), behind that
        caller's own cache entries (none when WEB_SEARCH_PROVIDER=none). `engines`: None routes the
        query (WebSearch.route); a sequence means exactly those providers, the configured ones among
        them (no leg for one that is not)."""
        if engines is None:
            chosen = self.route(query)
            names, reason = chosen.engines, chosen.reason
        else:
            names, reason = tuple(engines), "asked for by name"
        entity = entity_of(query)  # Baike is asked for the name, even when the query asks about it
        by_name = {p.name: p for p in self.providers}
        cache = self._cache
        return [
            WebLeg(
                CachedProvider(provider, cache, caller=caller) if cache is not None else provider,
                entity if entity and provider.name == "baike" else query,
                options or self.options,
                reader=self._reader,
                deep_read_top_n=self._top_n if deep_read_top_n is None else deep_read_top_n,
                deep_read_timeout_s=self._read_timeout_s,
                route=reason,
            )
            for provider in (by_name[n] for n in dict.fromkeys(names) if n in by_name)
        ]

    async def aclose(self) -> None:
        for client in self._clients:
            await client.aclose()
