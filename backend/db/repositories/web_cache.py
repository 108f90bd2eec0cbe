"""Web search results keyed by (caller, provider, sha256 of the caller and normalised query, options hash),
with a TTL. The question itself is not stored (migration 020)."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
from psycopg.types.json import Jsonb


def fetch(
    conn: psycopg.Connection, *, caller: uuid.UUID, provider: str, query_hash: str, options_hash: str
) -> Any | None:
    """The caller's cached results (JSON) when present and not expired."""
    row = conn.execute(
        "select results from web_search_cache where caller = %(caller)s and provider = %(provider)s "
        "and query_hash = %(query_hash)s and options_hash = %(options_hash)s and expires_at > now()",
        {"caller": caller, "provider": provider, "query_hash": query_hash, "options_hash": options_hash},
    ).fetchone()
    return row[0] if row else None


def store(
    conn: psycopg.Connection,
    *,
    caller: uuid.UUID,
    provider: str,
    query_hash: str,
    options_hash: str,
    results: list[dict[str, Any]],
    ttl_s: int,
) -> None:
    """Insert or refresh one of the caller's entries, valid for ttl_s seconds from now."""
    conn.execute(
        "insert into web_search_cache (caller, provider, query_hash, options_hash, results, fetched_at, "
        "expires_at) values (%(caller)s, %(provider)s, %(query_hash)s, %(options_hash)s, %(results)s, now(), "
        "now() + make_interval(secs => %(ttl_s)s)) "
        "on conflict (caller, provider, query_hash, options_hash) do update set "
        "results = excluded.results, fetched_at = excluded.fetched_at, expires_at = excluded.expires_at",
        {
            "caller": caller,
            "provider": provider,
            "query_hash": query_hash,
            "options_hash": options_hash,
            "results": Jsonb(results),
            "ttl_s": ttl_s,
        },
    )


def purge_expired(conn: psycopg.Connection) -> int:
    """Delete expired entries; the number deleted."""
    return conn.execute("delete from web_search_cache where expires_at <= now()").rowcount
