"""Web results cached in Postgres with a TTL (WEB_CACHE_TTL_S): a repeated question does not pay twice.

The key is (caller, provider, normalised query, options hash): the same words in another case or
spacing hit, other domain lists or depth miss, and another caller always misses, so that neither an
answer's `cached` flag nor its latency tells one user what another asked (migration 020). A caller is a
signed-in user, or auth.SHARED_SCOPE for the service path; AUTH_MODE=none's local user is one caller.
The question itself is not stored: the key holds the sha256 of the caller and the normalised query.
Successful answers are cached, empty ones included (a search API bills for "nothing found" too);
failures never are. A cache that cannot be read or written is logged and bypassed: it saves money, it
must never cost an answer. Its SQL is in db/repositories/web_cache.py.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Protocol

from psycopg_pool import ConnectionPool
from pydantic import TypeAdapter

from backend.db.repositories import web_cache as web_cache_repo
from backend.text.normalize import clean_query
from backend.web.providers import WebSearchProvider
from backend.web.types import ProviderResponse, SearchOptions, WebResult

logger = logging.getLogger(__name__)
_RESULTS = TypeAdapter(list[WebResult])
_PURGE_EVERY_S = 600.0


def cache_query(query: str) -> str:
    """The query as the cache sees it: canonical spacing and punctuation, case-folded."""
    return clean_query(query).casefold()


def query_hash(caller: uuid.UUID, query: str) -> str:
    """The key of one caller's question: equal questions of two callers share no hash."""
    return hashlib.sha256(f"{caller}\x00{cache_query(query)}".encode()).hexdigest()


class WebCacheStore(Protocol):
    async def get(
        self, *, caller: uuid.UUID, provider: str, query: str, options_hash: str
    ) -> list[WebResult] | None: ...

    async def put(
        self,
        *,
        caller: uuid.UUID,
        provider: str,
        query: str,
        options_hash: str,
        results: list[WebResult],
        ttl_s: int,
    ) -> None: ...


@dataclass(frozen=True)
class WebCache:
    """Where web results are cached, and for how long (WebSearch puts each caller's legs behind it)."""

    store: WebCacheStore
    ttl_s: int


class PostgresWebCache:
    """The web_search_cache table through the service's pool (queries run in a thread: psycopg is sync)."""

    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool
        self._last_purge = 0.0

    async def get(
        self, *, caller: uuid.UUID, provider: str, query: str, options_hash: str
    ) -> list[WebResult] | None:
        return await asyncio.to_thread(self._get, caller, provider, query, options_hash)

    async def put(
        self,
        *,
        caller: uuid.UUID,
        provider: str,
        query: str,
        options_hash: str,
        results: list[WebResult],
        ttl_s: int,
    ) -> None:
        await asyncio.to_thread(self._put, caller, provider, query, options_hash, results, ttl_s)

    def _get(self, caller: uuid.UUID, provider: str, query: str, options_hash: str) -> list[WebResult] | None:
        with self._pool.connection() as conn:
            row = web_cache_repo.fetch(
                conn,
                caller=caller,
                provider=provider,
                query_hash=query_hash(caller, query),
                options_hash=options_hash,
            )
        return _RESULTS.validate_python(row) if row is not None else None

    def _put(
        self,
        caller: uuid.UUID,
        provider: str,
        query: str,
        options_hash: str,
        results: list[WebResult],
        ttl_s: int,
    ) -> None:
        purge = time.monotonic() - self._last_purge > _PURGE_EVERY_S
        with self._pool.connection() as conn:
            web_cache_repo.store(
                conn,
                caller=caller,
                provider=provider,
                query_hash=query_hash(caller, query),
                options_hash=options_hash,
                results=_RESULTS.dump_python(results, mode="json"),
                ttl_s=ttl_s,
            )
            if purge:
                self._last_purge = time.monotonic()
                web_cache_repo.purge_expired(conn)


class CachedProvider:
    """A provider behind one caller's cache entries: a hit makes no request; a miss asks the provider
    and stores the answer for this caller only."""

    def __init__(self, inner: WebSearchProvider, cache: WebCache, *, caller: uuid.UUID) -> None:
        self.name = inner.name
        self._inner = inner
        self._store = cache.store
        self._ttl_s = cache.ttl_s
        self._caller = caller

    async def search(self, query: str, options: SearchOptions) -> ProviderResponse:
        key = options.cache_key
        try:
            cached = await self._store.get(
                caller=self._caller, provider=self.name, query=query, options_hash=key
            )
        except Exception as exc:  # the cache is an optimisation; its failure is not the answer's
            logger.warning("web cache read failed (%s: %s); asking %s", type(exc).__name__, exc, self.name)
            cached = None
        if cached is not None:
            return ProviderResponse(cached, attempts=0, cached=True)
        response = await self._inner.search(query, options)
        try:
            await self._store.put(
                caller=self._caller,
                provider=self.name,
                query=query,
                options_hash=key,
                results=response.results,
                ttl_s=self._ttl_s,
            )
        except Exception as exc:
            logger.warning("web cache write failed (%s: %s)", type(exc).__name__, exc)
        return response
