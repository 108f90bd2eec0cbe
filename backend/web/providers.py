"""Web search providers behind one Protocol: Tavily (the default with a key), SearXNG (self-hosted).

Plain httpx rather than tavily-python's AsyncTavilyClient: that client opens a new AsyncClient (new
connections, new TLS handshake) per call, reads TAVILY_API_KEY and proxy variables from the
environment itself (we have one Settings class), turns a 429 into an exception without its Retry-After,
and has no concurrency limit. Tavily's REST contract is one POST; with httpx both providers share one
connection pool, one retry policy (jittered backoff honouring Retry-After, a wall-clock timeout per
attempt), a semaphore per provider, real cancellation, and a base URL the tests point at a local fake.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import httpx

from backend.errors import WebSearchError
from backend.text.hygiene import drop_unstorable, unstorable_char
from backend.web.retry import RetryPolicy, json_body, send
from backend.web.types import ProviderResponse, SearchOptions, WebResult, utc_now
from backend.web.urls import domain_permitted

# Tavily refuses longer queries (HTTP 400); a chat question rarely needs more to find its pages.
TAVILY_MAX_QUERY_CHARS = 400
TAVILY_MAX_RESULTS = 20  # Tavily refuses more; WEB_MAX_RESULTS goes to 25 for the seed's engines


@runtime_checkable
class WebSearchProvider(Protocol):
    """One search engine. `search` raises WebSearchError on failure; callers turn it into diagnostics."""

    name: str

    async def search(self, query: str, options: SearchOptions) -> ProviderResponse: ...


class HttpProvider:
    """What both HTTP providers share: the client, a concurrency cap and the retry policy."""

    name = "http"
    _HINTS: dict[int, str] = {}

    def __init__(self, client: httpx.AsyncClient, *, policy: RetryPolicy, max_concurrency: int) -> None:
        self._client = client
        self._policy = policy
        # Created lazily: an asyncio primitive must be made on the loop that uses it.
        self._max_concurrency = max_concurrency
        self._slots: asyncio.Semaphore | None = None

    @property
    def slots(self) -> asyncio.Semaphore:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self._max_concurrency)
        return self._slots

    async def _json(
        self, build: Callable[[], httpx.Request], *, secrets: tuple[str, ...] = ()
    ) -> tuple[Any, int]:
        """Send within the concurrency cap (retried); the response's JSON and the attempts taken."""
        async with self.slots:
            response, attempts = await send(
                self._client,
                build,
                provider=self.name,
                policy=self._policy,
                secrets=secrets,
                hints=self._HINTS,
            )
        return json_body(response, provider=self.name, attempts=attempts), attempts

    def _bad(self, what: str, attempts: int) -> WebSearchError:
        return WebSearchError(
            f"{self.name} answered {what}", provider=self.name, kind="bad_response", attempts=attempts
        )

    async def _results(
        self, build: Callable[[], httpx.Request], *, secrets: tuple[str, ...] = ()
    ) -> tuple[list[WebResult], int]:
        """Send, parse the `results` list (Tavily's and SearXNG's shape); and the attempts taken."""
        data, attempts = await self._json(build, secrets=secrets)
        items = data.get("results") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise self._bad("without a results list", attempts)
        return web_results(items, self.name), attempts


class TavilyProvider(HttpProvider):
    """POST {TAVILY_BASE_URL}/search with `Authorization: Bearer <key>`."""

    name = "tavily"
    _HINTS = {
        400: "the query or options were refused (TAVILY_SEARCH_DEPTH, TAVILY_TOPIC, domain lists)",
        401: "check TAVILY_API_KEY",
        403: "check TAVILY_API_KEY and the plan's permissions",
        432: "the Tavily plan's credit limit is reached",
        433: "the Tavily pay-as-you-go limit is reached",
    }

    def __init__(
        self,
        client: httpx.AsyncClient,
        *,
        api_key: str,
        base_url: str,
        policy: RetryPolicy,
        max_concurrency: int = 4,
    ) -> None:
        super().__init__(client, policy=policy, max_concurrency=max_concurrency)
        self._key = api_key
        self._url = base_url.rstrip("/") + "/search"

    def _body(self, query: str, options: SearchOptions) -> dict[str, Any]:
        body: dict[str, Any] = {
            "query": query[:TAVILY_MAX_QUERY_CHARS],
            "max_results": min(options.max_results, TAVILY_MAX_RESULTS),
            "search_depth": options.search_depth,
            "topic": options.topic,
            "include_answer": False,
            "include_images": False,
            "include_raw_content": "text" if options.include_raw_content else False,
        }
        if options.include_domains:
            body["include_domains"] = list(options.include_domains)
        if options.exclude_domains:
            body["exclude_domains"] = list(options.exclude_domains)
        return body

    async def search(self, query: str, options: SearchOptions) -> ProviderResponse:
        body = self._body(query, options)
        headers = {"Authorization": f"Bearer {self._key}"}
        results, attempts = await self._results(
            lambda: self._client.build_request("POST", self._url, json=body, headers=headers),
            secrets=(self._key,),
        )
        return ProviderResponse(results, attempts=attempts)


class SearxngProvider(HttpProvider):
    """GET {SEARXNG_URL}/search?q=...&format=json (the instance must enable the json format)."""

    name = "searxng"
    _HINTS = {403: "enable the json format in the instance's settings.yml (search: formats: [html, json])"}

    def __init__(
        self, client: httpx.AsyncClient, *, base_url: str, policy: RetryPolicy, max_concurrency: int = 4
    ) -> None:
        super().__init__(client, policy=policy, max_concurrency=max_concurrency)
        self._url = base_url.rstrip("/") + "/search"

    async def search(self, query: str, options: SearchOptions) -> ProviderResponse:
        params = {"q": query, "format": "json", "pageno": "1", "safesearch": "1"}
        if options.topic == "news":
            params["categories"] = "news"
        results, attempts = await self._results(
            lambda: self._client.build_request("GET", self._url, params=params)
        )
        # SearXNG has no domain filter of its own; the lists are applied here, before the cut.
        permitted = [
            r
            for r in results
            if domain_permitted(r.url, allow=options.include_domains, deny=options.exclude_domains)
        ]
        return ProviderResponse(permitted[: options.max_results], attempts=attempts)


class NoWebSearch:
    """WEB_SEARCH_PROVIDER=none: no request is ever made."""

    name = "none"

    async def search(self, query: str, options: SearchOptions) -> ProviderResponse:
        return ProviderResponse([], attempts=0)


def web_results(items: list[Any], provider: str) -> list[WebResult]:
    """The usable hits among `items` (dicts with url, title, content, raw_content, published_date)."""
    now = utc_now()
    results = (_result(item, provider, now) for item in items if isinstance(item, dict))
    return [r for r in results if r is not None]


def _result(item: dict[str, Any], provider: str, now: datetime) -> WebResult | None:
    url = item.get("url")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")) or unstorable_char(url):
        return None
    score = item.get("score")
    raw = item.get("raw_content")
    published = item.get("published_date") or item.get("publishedDate")
    # A NUL or a lone surrogate from a provider would fail the cache and the answer's final write.
    return WebResult(
        url=url,
        title=drop_unstorable(str(item.get("title") or "")),
        content=drop_unstorable(str(item.get("content") or "")),
        score=float(score) if isinstance(score, int | float) else None,
        provider=provider,
        fetched_at=now,
        raw_content=drop_unstorable(raw) if isinstance(raw, str) and raw.strip() else None,
        published_date=drop_unstorable(str(published)) if published else None,
    )
