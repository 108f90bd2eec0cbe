"""What a web search returns: typed results, the options that shaped them, and per-provider diagnostics."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from backend.config import Settings
from backend.web.dedup import content_hash
from backend.web.urls import canonical_url

ProviderStatus = Literal["ok", "empty", "error", "timeout", "cancelled"]
ErrorKind = Literal["rate_limited", "unavailable", "timeout", "network", "rejected", "bad_response"]


def utc_now() -> datetime:
    return datetime.now(UTC)


class WebResult(BaseModel):
    """One hit of one provider. `content` is the provider's snippet; `raw_content` the page, when read."""

    model_config = ConfigDict(frozen=True)

    url: str
    title: str = ""
    content: str = ""
    score: float | None = None  # the provider's relative score within one response, not comparable across
    provider: str
    fetched_at: datetime
    raw_content: str | None = None
    published_date: str | None = None

    @property
    def text(self) -> str:
        """The best text we hold for this hit: the page when it was read, else the snippet."""
        return self.raw_content or self.content

    @property
    def canonical_url(self) -> str:
        return canonical_url(self.url)

    @property
    def content_hash(self) -> str:
        return content_hash(self.text)


@dataclass(frozen=True)
class SearchOptions:
    """Everything besides the query that changes what a provider returns (and so the cache key)."""

    max_results: int = 5
    search_depth: Literal["basic", "advanced"] = "basic"
    topic: Literal["general", "news", "finance"] = "general"
    include_raw_content: bool = False
    include_domains: tuple[str, ...] = ()
    exclude_domains: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, settings: Settings) -> SearchOptions:
        return cls(
            max_results=settings.web_max_results,
            search_depth=settings.tavily_search_depth,
            topic=settings.tavily_topic,
            include_domains=tuple(sorted(settings.web_allow_domains)),
            exclude_domains=tuple(sorted(settings.web_deny_domains)),
        )

    @property
    def cache_key(self) -> str:
        """A stable hash of these options (sorted JSON), part of the web cache key."""
        data = asdict(self)
        data["include_domains"] = sorted(self.include_domains)
        data["exclude_domains"] = sorted(self.exclude_domains)
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:32]


@dataclass(frozen=True)
class ProviderResponse:
    """A provider's answer to one query: its results, HTTP attempts taken, whether it came from cache."""

    results: list[WebResult]
    attempts: int = 1
    cached: bool = False


@dataclass
class ProviderDiagnostics:
    """What one provider leg did: in the API's diagnostics and the logs, never an exception."""

    provider: str
    query: str | None = None  # what this provider was asked
    route: str | None = None  # why the query went to this provider (backend/web/routing.py)
    status: ProviderStatus = "ok"
    results: int = 0
    blocked: int = 0  # hits dropped by the domain allow/deny lists
    latency_ms: float = 0.0
    attempts: int = 0
    cached: bool = False
    error_kind: str | None = None  # ErrorKind
    error: str | None = None
    pages_read: int = 0
    pages_failed: int = 0
    page_errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
